--- ACP permission prompts, drawn by the plugin (the server setting `permissionPrompts` is
--- "inline", so no `window/showMessageRequest` comes). Each `baton/permission` notification
--- with status "pending" is kept by task id + permission id; the oldest is shown in a floating
--- window (the title, the tool, and the preview: a command line or a diff), and
--- `:Baton permission` (or a number key in the float) answers it with `baton.answerPermission`.
--- A later notification with status "answered" or "cancelled" (answered elsewhere: the CLI,
--- another editor; or the task was cancelled) closes it, and the next one waiting is shown.

local client = require('baton.client')

local M = {}

---@class baton.Permission
---@field taskId string
---@field id string
---@field title string
---@field tool string
---@field kind string|nil
---@field preview string
---@field options { id: string, name: string, kind: string }[]
---@field client_id integer
---@field seq integer

---Pending requests by `taskId .. "\0" .. id`.
---@type table<string, baton.Permission>
M.pending = {}

---The float: its window, buffer, and the key of the request it shows.
---@type { win: integer|nil, buf: integer|nil, key: string|nil }
M.shown = { win = nil, buf = nil, key = nil }

M.ns = vim.api.nvim_create_namespace('baton_permission')

local seq = 0

---@param value any
---@return string
local function str(value)
  if value == nil or value == vim.NIL then
    return ''
  end
  return tostring(value)
end

---@param task_id string
---@param id string
---@return string
local function key(task_id, id)
  return task_id .. '\0' .. id
end

---Pending requests, oldest first; only those of one task when `task_id` is given.
---@param task_id? string
---@return baton.Permission[]
function M.list(task_id)
  local out = {}
  for _, p in pairs(M.pending) do
    if not task_id or p.taskId == task_id then
      table.insert(out, p)
    end
  end
  table.sort(out, function(a, b)
    return a.seq < b.seq
  end)
  return out
end

---The request the float shows (or the oldest waiting).
---@return baton.Permission|nil
function M.current()
  local p = M.shown.key and M.pending[M.shown.key]
  return p or M.list()[1]
end

---The lines the float shows.
---@param p baton.Permission
---@return string[] lines
---@return string[] preview the preview lines (from line 3 on)
function M.lines(p)
  local head =
    string.format('Baton: %s asks permission: %s', p.title ~= '' and p.title or p.taskId, p.tool)
  local lines = { head, '' }
  local preview = vim.split(p.preview ~= '' and p.preview or p.tool, '\n', { plain = true })
  if preview[#preview] == '' then
    table.remove(preview)
  end
  vim.list_extend(lines, preview)
  table.insert(lines, '')
  local choices = {}
  for i, o in ipairs(p.options) do
    table.insert(choices, string.format('[%d] %s', i, o.name))
  end
  table.insert(lines, table.concat(choices, '  ') .. '   (:Baton permission)')
  local waiting = #M.list()
  if waiting > 1 then
    table.insert(lines, string.format('%d requests wait', waiting))
  end
  return lines, preview
end

local function close()
  local win, buf = M.shown.win, M.shown.buf
  M.shown = { win = nil, buf = nil, key = nil }
  if win and vim.api.nvim_win_is_valid(win) then
    pcall(vim.api.nvim_win_close, win, true)
  end
  if buf and vim.api.nvim_buf_is_valid(buf) then
    pcall(vim.api.nvim_buf_delete, buf, { force = true })
  end
end

---Draw the oldest pending request in the float (or close it when none is left).
function M.render()
  local p = M.current()
  if not p then
    close()
    return
  end
  local lines, preview = M.lines(p)
  local buf = M.shown.buf
  if not buf or not vim.api.nvim_buf_is_valid(buf) then
    buf = vim.api.nvim_create_buf(false, true)
    vim.bo[buf].bufhidden = 'wipe'
    for i = 1, 9 do
      vim.keymap.set('n', tostring(i), function()
        M.choose(i)
      end, { buffer = buf, nowait = true, desc = 'Baton: answer the permission request' })
    end
    vim.keymap.set('n', 'q', function()
      M.hide()
    end, { buffer = buf, nowait = true, desc = 'Baton: hide the permission request' })
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
  vim.api.nvim_buf_set_extmark(buf, M.ns, 0, 0, { end_col = #lines[1], hl_group = 'WarningMsg' })
  if p.kind == 'edit' then
    for i, line in ipairs(preview) do
      local group = line:match('^%+') and 'DiffAdd' or line:match('^%-') and 'DiffDelete' or nil
      if group then
        vim.api.nvim_buf_set_extmark(buf, M.ns, i + 1, 0, { line_hl_group = group })
      end
    end
  end
  local width = 20
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  width = math.min(width, math.max(20, vim.o.columns - 4))
  local height = math.min(#lines, math.max(3, vim.o.lines - 6))
  local cfg = {
    relative = 'editor',
    anchor = 'NE',
    row = 1,
    col = vim.o.columns - 1,
    width = width,
    height = height,
    style = 'minimal',
    border = 'rounded',
    focusable = true,
  }
  if M.shown.win and vim.api.nvim_win_is_valid(M.shown.win) then
    vim.api.nvim_win_set_config(M.shown.win, cfg)
  else
    M.shown.win = vim.api.nvim_open_win(buf, false, cfg)
    vim.wo[M.shown.win].wrap = false
  end
  M.shown.buf = buf
  M.shown.key = key(p.taskId, p.id)
end

---Close the float; the requests stay (`:Baton permission` answers them).
function M.hide()
  close()
end

---`baton/permission`
---@param client_id integer
---@param params table
function M.on_permission(client_id, params)
  local task_id, id = str(params.taskId), str(params.id)
  if task_id == '' or id == '' then
    return
  end
  local k = key(task_id, id)
  if params.status == 'pending' then
    local options = {}
    for _, o in ipairs(type(params.options) == 'table' and params.options or {}) do
      if type(o) == 'table' and str(o.id) ~= '' then
        local name = str(o.name) ~= '' and str(o.name) or str(o.id)
        table.insert(options, { id = str(o.id), name = name, kind = str(o.kind) })
      end
    end
    local before = M.pending[k]
    if not before then
      seq = seq + 1
    end
    M.pending[k] = {
      taskId = task_id,
      id = id,
      title = str(params.title),
      tool = str(params.tool),
      kind = str(params.kind),
      preview = str(params.preview),
      options = options,
      client_id = client_id,
      seq = before and before.seq or seq,
    }
  else
    M.pending[k] = nil
  end
  M.render()
  pcall(vim.api.nvim_exec_autocmds, 'User', {
    pattern = 'BatonPermission',
    modeline = false,
    data = { taskId = task_id, id = id, status = params.status },
  })
  pcall(vim.cmd.redrawstatus, { bang = true })
end

---Answer a request with one of its options.
---@param p baton.Permission
---@param option { id: string }
function M.answer(p, option)
  local c = vim.lsp.get_client_by_id(p.client_id) or client.all()[1]
  if not c then
    vim.notify('Baton: no Baton server is running', vim.log.levels.WARN)
    return
  end
  local args = { taskId = p.taskId, option = option.id, permissionId = p.id }
  client.command(c, 'baton.answerPermission', args, function()
    -- the server's "answered" notification closes it too; do not wait for it
    M.pending[key(p.taskId, p.id)] = nil
    M.render()
  end)
end

---Answer the shown request with its option number `i`.
---@param i integer
function M.choose(i)
  local p = M.current()
  if p and p.options[i] then
    M.answer(p, p.options[i])
  end
end

---Pick an option of the shown request (or of the task's oldest) with `vim.ui.select`.
---@param task_id? string
function M.prompt(task_id)
  local p = task_id and M.list(task_id)[1] or M.current()
  if not p then
    vim.notify('Baton: no permission request is waiting', vim.log.levels.INFO)
    return
  end
  local prompt =
    string.format('Baton: %s asks permission: %s', p.title ~= '' and p.title or p.taskId, p.tool)
  vim.ui.select(p.options, {
    prompt = prompt,
    kind = 'baton_permission',
    format_item = function(o)
      return o.name
    end,
  }, function(option)
    if option and M.pending[key(p.taskId, p.id)] then
      M.answer(p, option)
    end
  end)
end

---@param client_id integer
function M.forget_client(client_id)
  for k, p in pairs(M.pending) do
    if p.client_id == client_id then
      M.pending[k] = nil
    end
  end
  M.render()
end

return M
