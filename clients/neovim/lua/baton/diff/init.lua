--- The inline diff: each pending hunk of a task drawn with extmarks in the buffers that show
--- its file, from the server's `baton/diff` notifications.
---
--- The proposal is not in the buffer until it is accepted, so a hunk's current lines (the
--- ones it replaces) are highlighted as removed and its new lines are shown below them as
--- virtual lines. A draft (the task still working) is drawn dimmed and cannot be accepted;
--- the final diff can, hunk by hunk, with buffer-local keys that exist only while the buffer
--- shows final hunks. Nothing else is touched: no window opens, focus never moves, and only
--- buffers already loaded are drawn in.
---
--- This module is the face and the notifications' handlers; the parts, each requirable alone:
--- `baton.diff.state` (what is known and drawn, and the queries over it), `baton.diff.render`
--- (extmarks), `baton.diff.keymaps` (the buffer-local review keys), `baton.diff.actions`
--- (accept / reject) and `baton.diff.nav` (next / previous hunk).

local actions = require('baton.diff.actions')
local keymaps = require('baton.diff.keymaps')
local nav = require('baton.diff.nav')
local render = require('baton.diff.render')
local state = require('baton.diff.state')

local M = {}

M.ns = state.ns
M.ns_anchor = state.ns_anchor
M.payloads = state.payloads
M.shown = state.shown
M.files = state.files
M.buffer_of = state.buffer_of
M.hunks = state.hunks
M.hunk_at = state.hunk_at
M.hunks_in = state.hunks_in
M.take_files = state.take_files
M.highlights = render.highlights
M.common = render.common
M.accept = actions.accept
M.reject = actions.reject
M.accept_all = actions.accept_all
M.reject_all = actions.reject_all
M.next = nav.next
M.prev = nav.prev

---Tasks whose diff is being fetched again (it was placed in an older text).
---@type table<string, boolean>
local refetching = {}

local function fire(data)
  pcall(
    vim.api.nvim_exec_autocmds,
    'User',
    { pattern = 'BatonDiff', modeline = false, data = data }
  )
end

---Draw a task's hunks of one file in a buffer, and set or remove the buffer's review keys.
---@param buf integer
---@param client_id integer
---@param payload table
---@param file table
local function render_file(buf, client_id, payload, file)
  render.file(buf, client_id, payload, file)
  keymaps.update(buf)
end

---Remove what is drawn for a task in one buffer, and its review keys once none is left.
---@param buf integer
---@param task_id string
local function clear(buf, task_id)
  render.clear(buf, task_id)
  keymaps.update(buf)
end

---Remove everything drawn for a task.
---@param task_id string
function M.clear_task(task_id)
  for buf, tasks in pairs(state.shown) do
    if tasks[task_id] then
      clear(buf, task_id)
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
  if not state.SHOWN[payload.state] then
    -- (its files stay in state.files: the task's summary may not have arrived yet)
    state.payloads[task_id] = nil
    M.clear_task(task_id)
    fire({ taskId = task_id, state = payload.state, final = payload.final, cleared = true })
    return
  end
  state.payloads[task_id] = { client_id = client_id, payload = payload }
  if type(payload.files) == 'table' and #payload.files > 0 then
    local paths = {}
    for _, file in ipairs(payload.files) do
      if type(file.uri) == 'string' then
        table.insert(paths, vim.uri_to_fname(file.uri))
      end
    end
    state.files[task_id] = paths
  end
  local drawn = {}
  for _, file in ipairs(payload.files or {}) do
    local buf = state.buffer_of(file.uri)
    if buf then
      drawn[buf] = true
      render_file(buf, client_id, payload, file)
      local version = file.version
      if not fresh and type(version) == 'number' and version ~= vim.lsp.util.buf_versions[buf] then
        refetch(client_id, task_id, buf)
      end
    end
  end
  for buf, tasks in pairs(state.shown) do
    if tasks[task_id] and not drawn[buf] then
      clear(buf, task_id)
    end
  end
  fire({ taskId = task_id, state = payload.state, final = payload.final, cleared = false })
end

---A task changed state (from `baton/tasks`): clear its diff once it has settled.
---@param task_id string
---@param task_state string
function M.on_task_state(task_id, task_state)
  if not state.SHOWN[task_state] then
    state.payloads[task_id] = nil
    M.clear_task(task_id)
  end
end

---A buffer was loaded: draw the diffs already known for its file.
---@param buf integer
function M.on_buffer(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' then
    return
  end
  for _, entry in pairs(state.payloads) do
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
  state.shown[buf] = nil
  keymaps.forget(buf)
end

---A server stopped: clear the diffs it sent.
---@param client_id integer
function M.forget_client(client_id)
  require('baton.undo').forget_client(client_id)
  for task_id, entry in pairs(state.payloads) do
    if entry.client_id == client_id then
      state.payloads[task_id] = nil
      state.files[task_id] = nil
      M.clear_task(task_id)
    end
  end
end

render.highlights() -- also without setup(): the groups are defined `default`, so yours win

return M
