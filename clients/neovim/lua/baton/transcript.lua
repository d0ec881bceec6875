--- A task's live transcript in a scratch buffer (`baton://transcript/<id>`): what the agent
--- said, as whole sentences, its tool calls with their files, checks, costs. The server
--- renders it (`baton.transcript`) and, while the buffer exists, sends its changes
--- (`baton/transcript`); a window whose cursor is on the last line follows the end.
--- The buffer is never modifiable and never asks to be saved (buftype=nofile).

local client = require('baton.client')

local M = {}

---@class baton.Transcript
---@field buf integer
---@field seq integer the last event the lines show
---@field client_id integer
---@field loading? boolean a whole transcript was asked for: changes wait for it

---@type table<string, baton.Transcript> task id → its transcript buffer
M.open_ones = {}

---@param task_id string
---@return string
function M.name(task_id)
  return 'baton://transcript/' .. task_id
end

---Replace the buffer's lines from `start` (0-based) on; windows at the end stay there.
---@param buf integer
---@param start integer
---@param lines string[]
local function set_lines(buf, start, lines)
  if not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  local count = vim.api.nvim_buf_line_count(buf)
  local following = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if vim.api.nvim_win_get_cursor(win)[1] >= count then
      table.insert(following, win)
    end
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, math.min(start, count), -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  local last = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(following) do
    pcall(vim.api.nvim_win_set_cursor, win, { last, 0 })
  end
end

---Ask the server for the whole transcript (and to follow it) and show it.
---@param task_id string
---@param c vim.lsp.Client
local function load(task_id, c)
  local asked = M.open_ones[task_id]
  if asked then
    asked.loading = true
  end
  client.command(c, 'baton.transcript', { taskId = task_id, follow = true }, function(result)
    local t = M.open_ones[task_id]
    if not t or not result then
      return
    end
    if result.taskId and result.taskId ~= task_id then
      -- asked with a prefix of the id: the changes name the whole id
      M.open_ones[task_id] = nil
      M.open_ones[result.taskId] = t
      pcall(vim.api.nvim_buf_set_name, t.buf, M.name(result.taskId))
    end
    t.seq = result.seq or 0
    t.client_id = c.id
    t.loading = false
    set_lines(t.buf, 0, result.lines or {})
  end)
end

---The scratch buffer of a task's transcript (made when there is none).
---@param task_id string
---@return integer buf
local function buffer(task_id)
  local t = M.open_ones[task_id]
  if t and vim.api.nvim_buf_is_valid(t.buf) then
    return t.buf
  end
  local buf = vim.fn.bufnr(M.name(task_id))
  if buf < 0 then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, M.name(task_id))
  end
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'markdown'
  vim.bo[buf].modifiable = false
  vim.api.nvim_create_autocmd('BufWipeout', {
    buffer = buf,
    once = true,
    callback = function()
      for id, gone in pairs(M.open_ones) do
        if gone.buf == buf then
          M.open_ones[id] = nil
          local c = vim.lsp.get_client_by_id(gone.client_id)
          if c then
            -- stop following (the answer, the text once more, is not needed)
            client.request(c, 'workspace/executeCommand', {
              command = 'baton.transcript',
              arguments = { { taskId = id, follow = false } },
            }, function() end)
          end
        end
      end
    end,
  })
  return buf
end

local watching = false

---A new Baton server (after a restart): transcripts whose server is gone ask it again.
local function watch_restarts()
  if watching then
    return
  end
  watching = true
  vim.api.nvim_create_autocmd('LspAttach', {
    group = vim.api.nvim_create_augroup('BatonTranscript', { clear = true }),
    callback = function(ev)
      local c = vim.lsp.get_client_by_id(ev.data.client_id)
      if not c or c.name ~= client.name then
        return
      end
      for task_id, t in pairs(M.open_ones) do
        if not vim.lsp.get_client_by_id(t.client_id) then -- its server stopped
          load(task_id, c)
        end
      end
    end,
  })
end

---Show a task's transcript in a split at the bottom (or the window already showing it),
---with the cursor at its end so the window follows what comes.
---@param task_id string
---@param c vim.lsp.Client
function M.open(task_id, c)
  watch_restarts()
  local buf = buffer(task_id)
  M.open_ones[task_id] = M.open_ones[task_id] or { buf = buf, seq = -1, client_id = c.id }
  local win = vim.fn.win_findbuf(buf)[1]
  if win then
    vim.api.nvim_set_current_win(win)
  else
    vim.cmd('botright split')
    vim.api.nvim_win_set_buf(0, buf)
    vim.wo.wrap = true
    vim.wo.linebreak = true
  end
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(buf), 0 })
  load(task_id, c)
end

---`baton/transcript`: apply a change to a shown transcript (ask again after a gap).
---@param client_id integer
---@param params table
function M.on_transcript(client_id, params)
  local t = M.open_ones[params.taskId or '']
  if not t or t.loading or not vim.api.nvim_buf_is_valid(t.buf) then
    return
  end
  if (params.seq or 0) <= t.seq then
    return
  end
  if params.since ~= t.seq then
    local c = vim.lsp.get_client_by_id(client_id)
    if c then
      load(params.taskId, c)
    end
    return
  end
  t.seq = params.seq
  t.client_id = client_id
  set_lines(t.buf, params.start or 0, params.lines or {})
end

return M
