--- The inline diff: each pending hunk of a task drawn with extmarks in the buffers that show
--- its file, from the server's `baton/diff` notifications.
---
--- The proposal is not in the buffer until it is accepted, so a hunk's current lines (the
--- ones it replaces) are highlighted as removed and its new lines are shown below them as
--- virtual lines. A draft (the task still working) is drawn dimmed and cannot be accepted;
--- the final diff can, hunk by hunk, with buffer-local keys that exist only while the buffer
--- shows final hunks. Nothing else is touched: no window opens, focus never moves, and only
--- buffers already loaded are drawn in.

local config = require('baton.config')

local M = {}

M.ns = vim.api.nvim_create_namespace('baton')
--- Invisible marks that follow each hunk's lines as the buffer changes.
M.ns_anchor = vim.api.nvim_create_namespace('baton.hunks')

--- States in which a task's diff is shown (a draft while working, the final one in review).
local SHOWN = {
  preparing = true,
  running = true,
  verifying = true,
  needs_input = true,
  review = true,
}

---@class baton.Hunk
---@field task string task id
---@field id string hunk id
---@field client_id integer
---@field final boolean
---@field stale boolean the user changed these lines since the snapshot
---@field conflict boolean accept would call it a conflict with the user's edits
---@field anchor integer extmark id in `ns_anchor`
---@field marks integer[] extmark ids in `ns`
---@field title string the task's title
---@field revised? boolean new since the last review (after a comment's revision turn)
---@field old_text string the lines it replaces, as the snapshot had them
---@field new_text string the lines it proposes

---The latest diff of each task: task id → { client_id, payload }.
---@type table<string, { client_id: integer, payload: table }>
M.payloads = {}

---What is drawn: buffer → task id → hunks.
---@type table<integer, table<string, baton.Hunk[]>>
M.shown = {}

---The files of each task's latest diff shown (paths), kept after the task settles until
---`take_files` (a proposal's proposer writes them once it is applied).
---@type table<string, string[]>
M.files = {}

---Buffers with Baton's keymaps set: buffer → the { mode, lhs } set.
---@type table<integer, { [1]: string, [2]: string }[]>
local mapped = {}

---Tasks whose diff is being fetched again (it was placed in an older text).
---@type table<string, boolean>
local refetching = {}

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

-- -- helpers --------------------------------------------------------------------------------

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

---The loaded buffer showing a file URI, or nil (never loads one).
---@param uri string
---@return integer|nil
local function buffer_of(uri)
  local fname = uri:match('^%a[%w+.-]*:') and vim.uri_to_fname(uri) or uri
  local real = vim.uv.fs_realpath(fname) or fname
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) then
      local name = vim.api.nvim_buf_get_name(buf)
      if name == fname or (name ~= '' and (vim.uv.fs_realpath(name) or name) == real) then
        return buf
      end
    end
  end
  return nil
end

---The loaded buffer showing a file (a URI or a path), or nil (never loads one).
M.buffer_of = buffer_of

---@param keys baton.Keymaps|false
---@param name string
---@return string|nil
local function key(keys, name)
  if not keys then
    return nil
  end
  local lhs = keys[name]
  if type(lhs) == 'string' and lhs ~= '' then
    return lhs
  end
  return nil
end

-- -- drawing --------------------------------------------------------------------------------

---@param buf integer
---@param task_id string
local function clear(buf, task_id)
  local tasks = M.shown[buf]
  local hunks = tasks and tasks[task_id]
  if not hunks then
    return
  end
  if vim.api.nvim_buf_is_valid(buf) then
    for _, h in ipairs(hunks) do
      pcall(vim.api.nvim_buf_del_extmark, buf, M.ns_anchor, h.anchor)
      for _, id in ipairs(h.marks) do
        pcall(vim.api.nvim_buf_del_extmark, buf, M.ns, id)
      end
    end
  end
  tasks[task_id] = nil
  if next(tasks) == nil then
    M.shown[buf] = nil
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
    local ok, id = pcall(vim.api.nvim_buf_set_extmark, buf, M.ns, row, col, opts)
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
  local anchor = vim.api.nvim_buf_set_extmark(buf, M.ns_anchor, anchor_row, 0, anchor_opts)

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
      local a, r = key(c.keymaps, 'accept'), key(c.keymaps, 'reject')
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

-- -- keymaps --------------------------------------------------------------------------------

---Each buffer-local key: the function it runs (in this module, else in `baton.hunks`), its
---description and its modes.
---@type table<string, { [1]: string, [2]: string, [3]: string[] }>
local ACTIONS = {
  accept = { 'accept', 'Baton: accept the hunk here (visual: those selected)', { 'n', 'x' } },
  reject = { 'reject', 'Baton: reject the hunk here (visual: those selected)', { 'n', 'x' } },
  accept_all = { 'accept_all', 'Baton: accept every hunk in this buffer', { 'n' } },
  reject_all = { 'reject_all', 'Baton: reject every hunk in this buffer', { 'n' } },
  next = { 'next', 'Baton: next hunk', { 'n' } },
  prev = { 'prev', 'Baton: previous hunk', { 'n' } },
  preview = { 'preview', 'Baton: preview the hunk under the cursor', { 'n' } },
  textobj = { 'select', 'Baton: the lines of the hunk under the cursor', { 'o', 'x' } },
}

---@param lhs string
---@return string
local function normalize(lhs)
  local leader = vim.g.mapleader or '\\'
  local local_leader = vim.g.maplocalleader or '\\'
  lhs = lhs:gsub('<[Ll][Ee][Aa][Dd][Ee][Rr]>', leader)
  lhs = lhs:gsub('<[Ll][Oo][Cc][Aa][Ll][Ll][Ee][Aa][Dd][Ee][Rr]>', local_leader)
  return vim.keycode(lhs)
end

---@param buf integer
---@return boolean
local function has_final(buf)
  for _, hunks in pairs(M.shown[buf] or {}) do
    for _, h in ipairs(hunks) do
      if h.final then
        return true
      end
    end
  end
  return false
end

---Set or remove the buffer's keymaps so they exist exactly while it shows final hunks.
---@param buf integer
local function update_keymaps(buf)
  local want = has_final(buf) and config.current.keymaps
  if want and not mapped[buf] then
    local foreign = {} ---@type table<string, boolean> mode .. lhs
    for _, mode in ipairs({ 'n', 'x', 'o' }) do
      for _, m in ipairs(vim.api.nvim_buf_get_keymap(buf, mode)) do
        foreign[mode .. normalize(m.lhs)] = true
      end
    end
    local set = {}
    for name, action in pairs(ACTIONS) do
      local lhs = key(want, name)
      for _, mode in ipairs(lhs and action[3] or {}) do
        if not foreign[mode .. normalize(lhs)] then
          vim.keymap.set(mode, lhs, function()
            local fn = M[action[1]] or require('baton.hunks')[action[1]]
            fn()
          end, { buffer = buf, desc = action[2] })
          table.insert(set, { mode, lhs })
        end
      end
    end
    mapped[buf] = set
  elseif not want and mapped[buf] then
    if vim.api.nvim_buf_is_valid(buf) then
      for _, m in ipairs(mapped[buf]) do
        pcall(vim.keymap.del, m[1], m[2], { buffer = buf })
      end
    end
    mapped[buf] = nil
  end
end

-- -- notifications and state ------------------------------------------------------------------

local function fire(data)
  pcall(
    vim.api.nvim_exec_autocmds,
    'User',
    { pattern = 'BatonDiff', modeline = false, data = data }
  )
end

---Draw a task's hunks of one file in a buffer (replacing what was drawn for that task).
---@param buf integer
---@param client_id integer
---@param payload table
---@param file table
local function render_file(buf, client_id, payload, file)
  clear(buf, payload.taskId)
  local hunks = {}
  for _, hunk in ipairs(file.hunks or {}) do
    if hunk.state == 'pending' then
      table.insert(hunks, draw(buf, client_id, payload, hunk))
    end
  end
  if #hunks > 0 then
    M.shown[buf] = M.shown[buf] or {}
    M.shown[buf][payload.taskId] = hunks
  end
  update_keymaps(buf)
end

---Remove everything drawn for a task.
---@param task_id string
function M.clear_task(task_id)
  for buf, tasks in pairs(M.shown) do
    if tasks[task_id] then
      clear(buf, task_id)
      update_keymaps(buf)
    end
  end
end

---Ask the server to place a task's diff in the current text again.
---@param client_id integer
---@param task_id string
---@param buf integer
local function refetch(client_id, task_id, buf)
  local client = vim.lsp.get_client_by_id(client_id)
  if not client or refetching[task_id] then
    return
  end
  refetching[task_id] = true
  require('baton.client').request(
    client,
    'workspace/executeCommand',
    { command = 'baton.diff', arguments = { { taskId = task_id } } },
    function(err, result)
      refetching[task_id] = nil
      if not err and type(result) == 'table' then
        M.on_diff(client_id, result, true)
      end
    end,
    buf
  )
end

---`baton/diff`: show a task's diff, or clear it when the task has settled.
---@param client_id integer
---@param payload table
---@param fresh? boolean placed in the current text already (do not fetch it again)
function M.on_diff(client_id, payload, fresh)
  local task_id = payload.taskId
  if type(task_id) ~= 'string' then
    return
  end
  require('baton.undo').on_diff(client_id, payload) -- an undo of an accept is a decision
  if not SHOWN[payload.state] then
    -- (its files stay in M.files: the task's summary may not have arrived yet)
    M.payloads[task_id] = nil
    M.clear_task(task_id)
    fire({ taskId = task_id, state = payload.state, final = payload.final, cleared = true })
    return
  end
  M.payloads[task_id] = { client_id = client_id, payload = payload }
  if type(payload.files) == 'table' and #payload.files > 0 then
    local paths = {}
    for _, file in ipairs(payload.files) do
      if type(file.uri) == 'string' then
        table.insert(paths, vim.uri_to_fname(file.uri))
      end
    end
    M.files[task_id] = paths
  end
  local drawn = {}
  for _, file in ipairs(payload.files or {}) do
    local buf = buffer_of(file.uri)
    if buf then
      drawn[buf] = true
      render_file(buf, client_id, payload, file)
      local version = file.version
      if not fresh and type(version) == 'number' and version ~= vim.lsp.util.buf_versions[buf] then
        refetch(client_id, task_id, buf)
      end
    end
  end
  for buf, tasks in pairs(M.shown) do
    if tasks[task_id] and not drawn[buf] then
      clear(buf, task_id)
      update_keymaps(buf)
    end
  end
  fire({ taskId = task_id, state = payload.state, final = payload.final, cleared = false })
end

---A task changed state (from `baton/tasks`): clear its diff once it has settled.
---@param task_id string
---@param state string
function M.on_task_state(task_id, state)
  if not SHOWN[state] then
    M.payloads[task_id] = nil
    M.clear_task(task_id)
  end
end

---The files of a task's latest diff (paths), forgotten from now on.
---@param task_id string
---@return string[]
function M.take_files(task_id)
  local paths = M.files[task_id] or {}
  M.files[task_id] = nil
  return paths
end

---A buffer was loaded: draw the diffs already known for its file.
---@param buf integer
function M.on_buffer(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' then
    return
  end
  for _, entry in pairs(M.payloads) do
    for _, file in ipairs(entry.payload.files or {}) do
      if vim.uri_to_fname(file.uri) == name then
        render_file(buf, entry.client_id, entry.payload, file)
      end
    end
  end
end

---A buffer is going away: forget what was drawn in it.
---@param buf integer
function M.on_unload(buf)
  M.shown[buf] = nil
  mapped[buf] = nil
end

---A server stopped: clear the diffs it sent.
---@param client_id integer
function M.forget_client(client_id)
  require('baton.undo').forget_client(client_id)
  for task_id, entry in pairs(M.payloads) do
    if entry.client_id == client_id then
      M.payloads[task_id] = nil
      M.files[task_id] = nil
      M.clear_task(task_id)
    end
  end
end

-- -- review actions -------------------------------------------------------------------------

---@class baton.HunkInfo
---@field task string
---@field id string
---@field final boolean
---@field stale boolean
---@field conflict boolean accept would call it a conflict with the user's edits
---@field row integer 0-based first line
---@field end_row integer 0-based last line (equal to row for a pure addition)
---@field title string
---@field client_id integer
---@field revised? boolean new since the last review (after a comment's revision turn)
---@field old_text string the lines it replaces, as the snapshot had them
---@field new_text string the lines it proposes

---The hunks drawn in a buffer, in line order.
---@param buf? integer
---@return baton.HunkInfo[]
function M.hunks(buf)
  buf = buf and buf ~= 0 and buf or vim.api.nvim_get_current_buf()
  local out = {}
  for _, hunks in pairs(M.shown[buf] or {}) do
    for _, h in ipairs(hunks) do
      local pos = vim.api.nvim_buf_get_extmark_by_id(buf, M.ns_anchor, h.anchor, { details = true })
      if pos[1] then
        local details = pos[3] or {}
        table.insert(out, {
          task = h.task,
          id = h.id,
          final = h.final,
          stale = h.stale,
          revised = h.revised,
          conflict = h.conflict,
          row = pos[1],
          end_row = details.end_row or pos[1],
          title = h.title,
          client_id = h.client_id,
          old_text = h.old_text,
          new_text = h.new_text,
        })
      end
    end
  end
  table.sort(out, function(a, b)
    return a.row < b.row or (a.row == b.row and a.id < b.id)
  end)
  return out
end

---The hunk on a line of the current buffer.
---@param row? integer 0-based; default: the cursor's line
---@return baton.HunkInfo|nil
function M.hunk_at(row)
  row = row or (vim.api.nvim_win_get_cursor(0)[1] - 1)
  for _, h in ipairs(M.hunks(0)) do
    if h.row <= row and row <= h.end_row then
      return h
    end
  end
  return nil
end

---@param verb 'accept'|'reject'
---@param hunks baton.HunkInfo[]
local function decide(verb, hunks)
  local by_task = {} ---@type table<string, { client_id: integer, ids: string[] }>
  local order = {}
  for _, h in ipairs(hunks) do
    if not by_task[h.task] then
      by_task[h.task] = { client_id = h.client_id, ids = {} }
      table.insert(order, h.task)
    end
    table.insert(by_task[h.task].ids, h.id)
  end
  local buf = vim.api.nvim_get_current_buf()
  for _, task_id in ipairs(order) do
    local group = by_task[task_id]
    local client = vim.lsp.get_client_by_id(group.client_id)
    if client then
      local on_result = nil
      if verb == 'accept' then -- a conflict: offer the ways to settle it
        on_result = function(result)
          require('baton.resolve').after_accept(hunks, result, buf)
        end
      end
      require('baton.client').command(
        client,
        'baton.' .. verb,
        { taskId = task_id, hunkIds = group.ids },
        on_result,
        buf
      )
    end
  end
end

---The hunks a range of lines of the current buffer touches (1-based, inclusive).
---@param line1 integer
---@param line2 integer
---@return baton.HunkInfo[]
function M.hunks_in(line1, line2)
  return vim.tbl_filter(function(h)
    return h.row <= line2 - 1 and h.end_row >= line1 - 1
  end, M.hunks(0))
end

---@param verb 'accept'|'reject'
---@param range? { [1]: integer, [2]: integer } lines (1-based); nil: the visual selection
---when in visual mode, else the hunk under the cursor
local function decide_here(verb, range)
  if not range then
    local line1, line2 = require('baton.delegate').selection()
    range = line1 and { line1, line2 } or nil
  end
  if range then
    local finals = vim.tbl_filter(function(h)
      return h.final
    end, M.hunks_in(range[1], range[2]))
    if #finals == 0 then
      vim.notify('Baton: no hunk ready for review in these lines', vim.log.levels.WARN)
    else
      decide(verb, finals)
    end
    return
  end
  local h = M.hunk_at()
  if not h then
    vim.notify('Baton: no hunk under the cursor', vim.log.levels.WARN)
  elseif not h.final then
    vim.notify('Baton: this is a draft; the task is still working', vim.log.levels.WARN)
  else
    decide(verb, { h })
  end
end

---@param verb 'accept'|'reject'
local function decide_all(verb)
  local finals = vim.tbl_filter(function(h)
    return h.final
  end, M.hunks(0))
  if #finals == 0 then
    vim.notify('Baton: no hunk ready for review in this buffer', vim.log.levels.WARN)
  else
    decide(verb, finals)
  end
end

---Accept the hunk under the cursor, or every hunk a range of lines (or, in visual mode, the
---selection) touches.
---@param range? { [1]: integer, [2]: integer } lines, 1-based, inclusive
function M.accept(range)
  decide_here('accept', range)
end

---Reject the hunk under the cursor, or every hunk a range (or the selection) touches.
---@param range? { [1]: integer, [2]: integer } lines, 1-based, inclusive
function M.reject(range)
  decide_here('reject', range)
end

function M.accept_all()
  decide_all('accept')
end

function M.reject_all()
  decide_all('reject')
end

---The hunk `count` hunks after (or before) a line ('wrapscan' applies), or nil.
---@param hunks baton.HunkInfo[] in line order
---@param row integer 0-based
---@param forward boolean
---@param count integer
---@return baton.HunkInfo|nil
local function step(hunks, row, forward, count)
  local target
  for _ = 1, count do
    local found
    if forward then
      for _, h in ipairs(hunks) do
        if h.row > row then
          found = h
          break
        end
      end
      found = found or (vim.o.wrapscan and hunks[1] or nil)
    else
      for i = #hunks, 1, -1 do
        if hunks[i].row < row then
          found = hunks[i]
          break
        end
      end
      found = found or (vim.o.wrapscan and hunks[#hunks] or nil)
    end
    if not found then
      break
    end
    target, row = found, found.row
  end
  return target
end

---@param forward boolean
---@param count? integer default: the count typed before the key (1 without one)
local function jump(forward, count)
  count = math.max(1, count or vim.v.count1)
  local hunks = M.hunks(0)
  if #hunks == 0 then
    vim.notify('Baton: no hunk in this buffer', vim.log.levels.WARN)
    return
  end
  local target = step(hunks, vim.api.nvim_win_get_cursor(0)[1] - 1, forward, count)
  if target then
    vim.cmd("normal! m'")
    vim.api.nvim_win_set_cursor(0, { target.row + 1, 0 })
  end
end

---Jump to the next hunk, or the `count`-th one after the cursor (`2]x`).
---@param count? integer default: `v:count1`
function M.next(count)
  jump(true, count)
end

---Jump to the previous hunk, or the `count`-th one before the cursor (`2[x`).
---@param count? integer default: `v:count1`
function M.prev(count)
  jump(false, count)
end

M.highlights() -- also without setup(): the groups are defined `default`, so yours win

return M
