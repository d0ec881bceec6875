--- Showing what a proposer writes. A proposal (an edit Claude Code in a terminal proposed
--- through Baton) is decided here, but Baton writes nothing: once it is applied, the proposer
--- writes the file a moment later. Each of the proposal's files is watched for a few seconds
--- and its buffer reloaded (`:checktime`, with 'autoread' on for that buffer while it runs)
--- when the file on disk has changed and stayed the same for one tick. The reload keeps undo
--- ('undoreload'): `u` brings the text from before back. A buffer with unsaved changes is
--- never reloaded: the user is told instead. The user is told of every reload of a watched
--- buffer (`FileChangedShellPost`), whoever made it: the watch's first look, a later one,
--- or Neovim itself.

local config = require('baton.config')

local M = {}

--- Milliseconds between two looks at a watched file.
M.period = 100
--- Milliseconds a file is watched after its proposal was applied.
M.duration = 15000

---@class baton.Watch
---@field path string
---@field by string who writes it, e.g. "Claude Code"
---@field seen string|nil the file's stat at the last look
---@field acted string|nil the file's stat the buffer was last checked against
---@field deadline integer
---@field timer uv.uv_timer_t|nil
---@field warned boolean
---@field tick integer|nil the buffer's changedtick at the last look

---What is watched: file path → watch.
---@type table<string, baton.Watch>
M.watches = {}

---@param path string
---@return string|nil
local function stamp(path)
  local st = vim.uv.fs_stat(path)
  if not st then
    return nil
  end
  return string.format('%d.%09d:%d', st.mtime.sec, st.mtime.nsec or 0, st.size)
end

---Reload a buffer that has no unsaved changes when its file changed on disk; never asks.
---@param buf integer
---@return boolean ok false: could not check now (try again later)
local function checktime(buf)
  local ok = pcall(vim.api.nvim_buf_call, buf, function()
    local had = vim.api.nvim_get_option_value('autoread', { scope = 'local' })
    vim.cmd('setlocal autoread')
    local done = pcall(vim.cmd.checktime, buf)
    if type(had) == 'boolean' then
      vim.api.nvim_set_option_value('autoread', had, { scope = 'local' })
    else
      vim.cmd('set autoread<')
    end
    if not done then
      error('checktime failed')
    end
  end)
  return ok
end

---@param w baton.Watch
---@param level integer
---@param msg string
local function tell(w, level, msg)
  if config.current.notify then
    vim.notify(string.format(msg, w.by, vim.fn.fnamemodify(w.path, ':~:.')), level, {
      title = 'Baton',
    })
  end
end

---Bring the buffer of a watched file up to date with the file.
---@param w baton.Watch
---@return boolean done false: try again at the next tick
local function refresh(w)
  local buf = require('baton.diff').buffer_of(w.path)
  if not buf then
    return true
  end
  if vim.bo[buf].modified then
    if not w.warned then
      w.warned = true
      tell(
        w,
        vim.log.levels.WARN,
        'Baton: %s wrote %s, but its buffer has unsaved changes: kept them'
          .. ' (:e! loads the file and drops them)'
      )
    end
    return true
  end
  return checktime(buf) -- a reload is told by the FileChangedShellPost handler below
end

---The watch of a buffer's file, if it is watched.
---@param buf integer
---@return baton.Watch|nil
local function watch_of(buf)
  local diff = require('baton.diff')
  for path, w in pairs(M.watches) do
    if diff.buffer_of(path) == buf then
      return w
    end
  end
  return nil
end

---Remember where a watched buffer stands, to tell a reload from an event that changed nothing.
---@param w baton.Watch
local function look(w)
  local buf = require('baton.diff').buffer_of(w.path)
  if buf and not vim.bo[buf].modified then
    w.tick = vim.api.nvim_buf_get_changedtick(buf)
  end
end

vim.api.nvim_create_autocmd('FileChangedShellPost', {
  group = vim.api.nvim_create_augroup('BatonReload', { clear = true }),
  desc = 'Baton: tell that a buffer a proposer wrote was reloaded',
  callback = function(args)
    local w = watch_of(args.buf)
    if not w or vim.bo[args.buf].modified then
      return
    end
    local now = vim.api.nvim_buf_get_changedtick(args.buf)
    if now ~= w.tick then
      w.tick = now
      tell(w, vim.log.levels.INFO, 'Baton: %s wrote %s (reloaded; u undoes it)')
    end
  end,
})

---@param w baton.Watch
local function stop(w)
  if w.timer then
    w.timer:stop()
    w.timer:close()
    w.timer = nil
  end
  if M.watches[w.path] == w then
    M.watches[w.path] = nil
  end
end

---@param w baton.Watch
local function tick(w)
  if not w.timer then
    return
  end
  look(w)
  local now = stamp(w.path)
  if now ~= w.seen then
    w.seen = now -- changed since the last look: wait until it is the same for one tick
  elseif now ~= nil and now ~= w.acted then
    if refresh(w) then
      w.acted = now
    end
  end
  if vim.uv.now() >= w.deadline then
    stop(w)
  end
end

---Watch one file for the write its proposer is about to make.
---@param path string
---@param by string
function M.watch_file(path, by)
  local deadline = vim.uv.now() + M.duration
  local w = M.watches[path]
  if w then
    w.deadline = deadline
    return
  end
  local now = stamp(path)
  w = { path = path, by = by, seen = now, acted = now, deadline = deadline, warned = false }
  M.watches[path] = w
  look(w)
  -- it may have written already (the buffer knows what it last read: checktime compares)
  local buf = require('baton.diff').buffer_of(path)
  if buf and not vim.bo[buf].modified then
    checktime(buf)
  end
  w.timer = vim.uv.new_timer()
  w.timer:start(
    M.period,
    M.period,
    vim.schedule_wrap(function()
      tick(w)
    end)
  )
end

---The loaded file buffers under a folder.
---@param root string
---@return string[]
local function paths_under(root)
  local out = {}
  local prefix = (vim.uv.fs_realpath(root) or root):gsub('/$', '') .. '/'
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == '' then
      local name = vim.api.nvim_buf_get_name(buf)
      if name ~= '' then
        local real = vim.uv.fs_realpath(name) or name
        if real:sub(1, #prefix) == prefix then
          table.insert(out, name)
        end
      end
    end
  end
  return out
end

---A proposal was applied: watch its files (from its diff; without one, the buffers under its
---root) for the proposer's write.
---@param task table the task summary from `baton/tasks`
---@param files string[] the paths of its diff
function M.watch(task, files)
  local by = require('baton.status').proposer(task) or 'the proposer'
  if #files == 0 and type(task.root) == 'string' and task.root ~= '' then
    files = paths_under(task.root)
  end
  for _, path in ipairs(files) do
    M.watch_file(path, by)
  end
end

---Stop watching everything.
function M.stop_all()
  for _, w in pairs(M.watches) do
    stop(w)
  end
end

return M
