--- Drawing the inline diff with extmarks: a hunk's current lines (the ones it replaces) are
--- highlighted as removed, its new lines shown below them as virtual lines, with signs and an
--- end-of-line hint; a draft (the task still working) is drawn dimmed. Changed words are marked
--- when old and new lines pair up one to one.

local config = require('baton.config')
local keymaps = require('baton.diff.keymaps')
local state = require('baton.diff.state')

local M = {}

---Define the highlight groups (as `default` links, so a colorscheme's or yours win).
function M.highlights()
  local links = {
    BatonAdd = 'DiffAdd',
    BatonAddText = 'DiffText',
    BatonDelete = 'DiffDelete',
    BatonDeleteText = 'DiffText',
    BatonDraft = 'Comment',
    BatonSignAdd = 'Added',
    BatonSignChange = 'Changed',
    BatonSignDelete = 'Removed',
    BatonSignDraft = 'NonText',
    BatonHint = 'Comment',
  }
  for group, target in pairs(links) do
    vim.api.nvim_set_hl(0, group, { link = target, default = true })
  end
end

---@param text string|nil
---@return string[]
local function split_lines(text)
  if text == nil or text == vim.NIL or text == '' then
    return {}
  end
  text = text:gsub('\r\n', '\n')
  if text:sub(-1) == '\n' then
    text = text:sub(1, -2)
  end
  return vim.split(text, '\n', { plain = true })
end

---@param buf integer
---@param text string
---@return string
local function expand_tabs(buf, text)
  if not text:find('\t', 1, true) then
    return text
  end
  local ts = vim.bo[buf].tabstop
  local out, col = {}, 0
  for ch in text:gmatch('[%z\1-\127\194-\244][\128-\191]*') do
    if ch == '\t' then
      local n = ts - (col % ts)
      table.insert(out, string.rep(' ', n))
      col = col + n
    else
      table.insert(out, ch)
      col = col + vim.fn.strdisplaywidth(ch)
    end
  end
  return table.concat(out)
end

---The byte length of the common prefix and suffix of two lines, on character boundaries.
---@param a string
---@param b string
---@return integer prefix
---@return integer suffix
function M.common(a, b)
  local n = math.min(#a, #b)
  local p = 0
  while p < n and a:byte(p + 1) == b:byte(p + 1) do
    p = p + 1
  end
  -- back off to a character start in both
  while p > 0 and p < #a and vim.str_utf_start(a, p + 1) ~= 0 do
    p = p - 1
  end
  local s = 0
  while s < n - p and a:byte(#a - s) == b:byte(#b - s) do
    s = s + 1
  end
  while s > 0 and s < #a and vim.str_utf_start(a, #a - s + 1) ~= 0 do
    s = s - 1
  end
  return p, s
end

---Remove what is drawn for a task in a buffer.
---@param buf integer
---@param task_id string
function M.clear(buf, task_id)
  local tasks = state.shown[buf]
  local hunks = tasks and tasks[task_id]
  if not hunks then
    return
  end
  if vim.api.nvim_buf_is_valid(buf) then
    for _, h in ipairs(hunks) do
      pcall(vim.api.nvim_buf_del_extmark, buf, state.ns_anchor, h.anchor)
      for _, id in ipairs(h.marks) do
        pcall(vim.api.nvim_buf_del_extmark, buf, state.ns, id)
      end
    end
  end
  tasks[task_id] = nil
  if next(tasks) == nil then
    state.shown[buf] = nil
  end
end

---Draw one pending hunk.
---@param buf integer
---@param client_id integer
---@param payload table the `baton/diff` payload
---@param hunk table one of its hunks
---@return baton.Hunk
local function draw(buf, client_id, payload, hunk)
  local c = config.current
  local final = payload.final == true and payload.state == 'review'
  local n = vim.api.nvim_buf_line_count(buf)
  local s = math.min(math.max(hunk.range.start.line, 0), n)
  local e = hunk.range['end'].line
  if hunk.range['end'].character > 0 then
    e = e + 1
  end
  e = math.min(math.max(e, s), n)
  local old, new = split_lines(hunk.oldText), split_lines(hunk.newText)
  local add_hl = final and 'BatonAdd' or 'BatonDraft'
  local text_hl = final and 'BatonAddText' or 'BatonDraft'
  local marks = {}

  ---@param row integer
  ---@param col integer
  ---@param opts table
  local function mark(row, col, opts)
    opts.priority = opts.priority or 200
    local ok, id = pcall(vim.api.nvim_buf_set_extmark, buf, state.ns, row, col, opts)
    if ok then
      table.insert(marks, id)
    end
  end

  local anchor_row = math.min(s, math.max(n - 1, 0))
  local anchor_opts = { right_gravity = false } ---@type table
  if e > s then
    local last = vim.api.nvim_buf_get_lines(buf, e - 1, e, false)[1] or ''
    anchor_opts.end_row, anchor_opts.end_col = e - 1, #last
    anchor_opts.end_right_gravity = true
  end
  local anchor = vim.api.nvim_buf_set_extmark(buf, state.ns_anchor, anchor_row, 0, anchor_opts)

  -- the current lines the hunk replaces
  local current = vim.api.nvim_buf_get_lines(buf, s, e, false)
  local word = final and c.word_diff and #old == #new and #old == e - s and not hunk.stale
  local pairs_at = {} ---@type table<integer, { [1]: integer, [2]: integer }>
  for i, line in ipairs(current) do
    local opts = {
      sign_text = #new == 0 and c.signs.delete or c.signs.change,
      sign_hl_group = final and (#new == 0 and 'BatonSignDelete' or 'BatonSignChange')
        or 'BatonSignDraft',
    }
    if final then
      opts.line_hl_group = 'BatonDelete'
    end
    mark(s + i - 1, 0, opts)
    if word and line == old[i] then
      local p, q = M.common(old[i], new[i])
      pairs_at[i] = { p, q }
      if #line - q > p then
        mark(s + i - 1, p, { end_col = #line - q, hl_group = 'BatonDeleteText', priority = 201 })
      end
    end
  end

  -- the new lines, below the ones they replace
  if #new > 0 then
    local width = vim.o.columns
    local virt = {}
    for i, line in ipairs(new) do
      local chunks
      local pq = pairs_at[i]
      if pq and (pq[1] > 0 or pq[2] > 0) then
        local p, q = pq[1], pq[2]
        chunks = {
          { expand_tabs(buf, line:sub(1, p)), add_hl },
          { expand_tabs(buf, line:sub(p + 1, #line - q)), text_hl },
          { expand_tabs(buf, line:sub(#line - q + 1)), add_hl },
        }
      else
        chunks = { { expand_tabs(buf, line), add_hl } }
      end
      local used = 0
      for _, chunk in ipairs(chunks) do
        used = used + vim.fn.strdisplaywidth(chunk[1])
      end
      if used < width then
        table.insert(chunks, { string.rep(' ', width - used), add_hl })
      end
      table.insert(virt, chunks)
    end
    if e > s then
      mark(e - 1, 0, { virt_lines = virt })
    elseif s < n then
      mark(s, 0, { virt_lines = virt, virt_lines_above = true })
    else
      mark(math.max(n - 1, 0), 0, { virt_lines = virt })
    end
    if e == s then
      mark(math.min(s, math.max(n - 1, 0)), 0, {
        sign_text = c.signs.add,
        sign_hl_group = final and 'BatonSignAdd' or 'BatonSignDraft',
      })
    end
  end

  if c.hint then
    local hint
    if not final then
      hint = 'Baton: working… (draft)'
    else
      local a, r = keymaps.lhs(c.keymaps, 'accept'), keymaps.lhs(c.keymaps, 'reject')
      -- "(edited since)" first: a long title must not push it past the window's edge; a
      -- hunk accept would call a conflict says so beforehand (|baton-resolve|)
      local lead = hunk.stale and 'Baton (edited since): ' or 'Baton: '
      if hunk.conflict == true then
        lead = (hunk.stale and 'Baton (edited since)' or 'Baton') .. ' conflicts, :Baton resolve: '
      elseif hunk.revised then -- new since the last review (a revision turn)
        lead = lead .. '(revised) '
      end
      local known = require('baton.status').tasks[payload.taskId]
      if known and require('baton.status').proposer(known) then
        hint = lead .. require('baton.status').title(known)
      else
        hint = lead .. (payload.title or payload.taskId)
      end
      if a and r then
        hint = string.format('%s · %s accept · %s reject', hint, a, r)
      end
    end
    mark(anchor_row, 0, { virt_text = { { '  ' .. hint, 'BatonHint' } }, virt_text_pos = 'eol' })
  end

  return {
    task = payload.taskId,
    id = hunk.id,
    client_id = client_id,
    final = final,
    stale = hunk.stale == true,
    revised = hunk.revised == true,
    conflict = hunk.conflict == true,
    anchor = anchor,
    marks = marks,
    title = payload.title or payload.taskId,
    old_text = type(hunk.oldText) == 'string' and hunk.oldText or '',
    new_text = type(hunk.newText) == 'string' and hunk.newText or '',
  }
end

---Draw a task's hunks of one file in a buffer (replacing what was drawn for that task).
---@param buf integer
---@param client_id integer
---@param payload table
---@param file table
function M.file(buf, client_id, payload, file)
  M.clear(buf, payload.taskId)
  local hunks = {}
  for _, hunk in ipairs(file.hunks or {}) do
    if hunk.state == 'pending' then
      table.insert(hunks, draw(buf, client_id, payload, hunk))
    end
  end
  if #hunks > 0 then
    state.shown[buf] = state.shown[buf] or {}
    state.shown[buf][payload.taskId] = hunks
  end
end

return M
