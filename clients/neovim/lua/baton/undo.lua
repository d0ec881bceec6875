--- Undo and redo of accepted hunks, as decisions.
---
--- An accepted hunk is an edit of the buffer, so `u` takes it out again; the server's record
--- must follow, or the task ends applied with none of its change in the file. This module
--- remembers the accepted hunks of the diffs the server sends (applied tasks included) and,
--- when a buffer that shows their file changes, asks the server to decide:
---
--- * an accepted hunk whose old text is back in the buffer → `baton.reopen` (pending again:
---   the diff is drawn again and can be accepted or rejected; an applied task is in review);
--- * a hunk reopened that way whose new text is back (a redo) → `baton.reaccept`.
---
--- The text search here is only a cheap first look: the server reads the buffer (the LSP
--- document) and decides only the hunks whose place holds that side, so a false guess
--- costs one request and changes nothing. Nothing here edits a buffer.

local M = {}

---States whose accepted hunks an undo can take back.
local DECIDED = { review = true, applied = true }

---@class baton.Watched
---@field client_id integer
---@field files table<string, table[]> file name → its hunks as the last diff sent them
---@field accepted table<string, boolean> hunk ids this editor has seen accepted

---Tasks whose hunks are watched: task id → what is known of them.
---@type table<string, baton.Watched>
M.watched = {}

---Tasks with a request under way (one at a time per task).
---@type table<string, boolean>
local busy = {}
---The last request sent per task and buffer ("tick verb ids"): never the same one twice.
---@type table<string, string>
local asked = {}
---Buffers with a check pending (debounced).
---@type table<integer, boolean>
local pending = {}
local group ---@type integer|nil

---@param text any
---@return string
local function lf(text)
  if type(text) ~= 'string' then
    return ''
  end
  return (text:gsub('\r\n', '\n'))
end

---The buffer's whole text, with a final newline (as hunk texts end).
---@param buf integer
---@return string
local function buffer_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n') .. '\n'
end

---@param haystack string
---@param needle string
---@return boolean
local function has(haystack, needle)
  return haystack:find(needle, 1, true) ~= nil
end

---Could the buffer hold this side of the hunk? (a first look; the server decides)
---@param text string the buffer's text
---@param side string the side that should be there
---@param other string the side that should not
---@return boolean
local function may_hold(text, side, other)
  if side ~= '' then
    return has(text, side)
  end
  return other ~= '' and not has(text, other)
end

---@param name string
---@return integer|nil
local function loaded(name)
  return require('baton.diff').buffer_of(name)
end

local function ensure_autocmds()
  if group then
    return
  end
  group = vim.api.nvim_create_augroup('baton.undo', { clear = true })
  vim.api.nvim_create_autocmd({ 'TextChanged', 'TextChangedI', 'BufReadPost' }, {
    group = group,
    callback = function(ev)
      M.schedule(ev.buf)
    end,
  })
end

---Remember the hunks of a `baton/diff` payload (any state), then look at their buffers.
---@param client_id integer
---@param payload table
function M.on_diff(client_id, payload)
  local task_id = payload.taskId
  if type(task_id) ~= 'string' then
    return
  end
  if payload.final ~= true or not DECIDED[payload.state] then
    M.watched[task_id] = nil -- working again, or settled otherwise: nothing to take back
    return
  end
  local known = M.watched[task_id]
  local files, any = {}, false
  local accepted = known and known.accepted or {}
  for _, file in ipairs(payload.files or {}) do
    if type(file.uri) == 'string' and type(file.hunks) == 'table' then
      local hunks = {}
      for _, h in ipairs(file.hunks) do
        if not h.wholeFile and type(h.id) == 'string' then
          table.insert(hunks, h)
          if h.state == 'accepted' then
            accepted[h.id] = true
          end
        end
      end
      files[vim.uri_to_fname(file.uri)] = hunks
    end
  end
  for _, f in pairs(files) do
    for _, h in ipairs(f) do
      any = any or accepted[h.id] == true
    end
  end
  if not any then
    M.watched[task_id] = nil
    return
  end
  M.watched[task_id] = { client_id = client_id, files = files, accepted = accepted }
  ensure_autocmds()
  for name in pairs(files) do
    local buf = loaded(name)
    if buf then
      M.schedule(buf)
    end
  end
end

---Look at a buffer soon (after a burst of changes settles).
---@param buf integer
function M.schedule(buf)
  if pending[buf] or next(M.watched) == nil then
    return
  end
  pending[buf] = true
  vim.defer_fn(function()
    pending[buf] = nil
    if vim.api.nvim_buf_is_valid(buf) and vim.api.nvim_buf_is_loaded(buf) then
      M.check(buf)
    end
  end, 150)
end

---Ask the server to decide the hunks whose side the buffer may hold again.
---@param task_id string
---@param verb 'baton.reopen'|'baton.reaccept'
---@param ids string[]
---@param buf integer
local function send(task_id, verb, ids, buf)
  local w = M.watched[task_id]
  local client = w and vim.lsp.get_client_by_id(w.client_id)
  if not client then
    return
  end
  busy[task_id] = true
  require('baton.client').request(
    client,
    'workspace/executeCommand',
    { command = verb, arguments = { { taskId = task_id, hunkIds = ids } } },
    function(err, result)
      busy[task_id] = nil
      if err then
        vim.notify(
          string.format('Baton: %s: %s', verb, err.message or tostring(err)),
          vim.log.levels.WARN
        )
        return
      end
      local done = type(result) == 'table'
          and (verb == 'baton.reopen' and result.reopened or result.reaccepted)
        or {}
      if #done > 0 then
        pcall(vim.api.nvim_exec_autocmds, 'User', {
          pattern = 'BatonUndo',
          modeline = false,
          data = { taskId = task_id, state = result.state, command = verb, hunkIds = done },
        })
      end
      -- the buffer may have moved on meanwhile (another undo): look again
      M.schedule(buf)
    end,
    buf
  )
end

---Compare a buffer with the watched hunks of its file and send what may have changed.
---@param buf integer
function M.check(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' then
    return
  end
  local real = vim.uv.fs_realpath(name) or name
  local text ---@type string|nil
  for task_id, w in pairs(M.watched) do
    local hunks = w.files[name] or w.files[real]
    if hunks and not busy[task_id] then
      text = text or buffer_text(buf)
      local reopen, reaccept = {}, {}
      for _, h in ipairs(hunks) do
        local old, new = lf(h.oldText), lf(h.newText)
        if h.state == 'accepted' and may_hold(text, old, new) then
          table.insert(reopen, h.id)
        elseif h.state == 'pending' and w.accepted[h.id] and may_hold(text, new, old) then
          table.insert(reaccept, h.id)
        end
      end
      local verb, ids = 'baton.reopen', reopen
      if #reopen == 0 then
        verb, ids = 'baton.reaccept', reaccept
      end
      local key = task_id .. ' ' .. buf
      local request = table.concat({ vim.b[buf].changedtick, verb, unpack(ids) }, ' ')
      if #ids > 0 and asked[key] ~= request then
        asked[key] = request
        send(task_id, verb, ids, buf)
      end
    end
  end
end

---A server stopped: forget what it sent.
---@param client_id integer
function M.forget_client(client_id)
  for task_id, w in pairs(M.watched) do
    if w.client_id == client_id then
      M.watched[task_id] = nil
      busy[task_id] = nil -- its answer will never come
    end
  end
end

return M
