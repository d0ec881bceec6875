--- Baton for Neovim: delegate a selection to a coding agent, watch the task, and review its
--- diff inline, hunk by hunk. See `:h baton`.
---
--- This module only wires: each feature lives in its own submodule, loaded when first used.

local M = {}

---Configure the plugin and start attaching `baton lsp` to file buffers under a workspace.
---@param opts? table partial baton.Config (see `:h baton-config`)
function M.setup(opts)
  local config = require('baton.config')
  config.set(opts)
  local diff = require('baton.diff')
  diff.highlights()
  local client = require('baton.client')
  local group = vim.api.nvim_create_augroup('baton', { clear = true })
  vim.api.nvim_create_autocmd('ColorScheme', { group = group, callback = diff.highlights })
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile' }, {
    group = group,
    callback = function(ev)
      if config.current.auto_attach and client.wanted(ev.buf) then
        client.attach(ev.buf, true)
      end
      diff.on_buffer(ev.buf)
    end,
  })
  vim.api.nvim_create_autocmd('BufUnload', {
    group = group,
    callback = function(ev)
      diff.on_unload(ev.buf)
    end,
  })
  vim.api.nvim_create_autocmd('LspProgress', {
    group = group,
    callback = function(ev)
      local c = ev.data and vim.lsp.get_client_by_id(ev.data.client_id)
      if c and c.name == client.name then
        pcall(vim.cmd.redrawstatus, { bang = true })
      end
    end,
  })
  if config.current.auto_attach then
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(buf) and client.wanted(buf) then
        client.attach(buf, true)
      end
    end
  end
  -- a second setup() changes the settings of the servers already running
  for _, c in ipairs(client.all()) do
    c.settings = config.server_settings()
    client.notify(c, 'workspace/didChangeConfiguration', { settings = c.settings })
  end
end

---The statusline component: "Baton ▶1 ?1 ✓2 ✗1" (running, needs input, ready for review,
---failed), or "" when there is nothing to show. Usable from lualine as a function component.
---@return string
function M.status()
  return require('baton.status').text()
end

---The counts behind `status()`.
---@return baton.Counts
function M.counts()
  return require('baton.status').counts()
end

---Delegate a range of the current buffer (or the whole file).
---@param opts? baton.DelegateOpts
function M.delegate(opts)
  require('baton.delegate').delegate(opts)
end

---Delegate the visual selection (in normal mode: the whole file), asking for the instruction.
---@param opts? baton.DelegateOpts
function M.delegate_selection(opts)
  local line1, line2 = require('baton.delegate').selection()
  M.delegate(vim.tbl_extend('force', opts or {}, { line1 = line1, line2 = line2 }))
end

---Fix the diagnostics under the cursor, or in the visual selection.
function M.fix()
  local line1, line2 = require('baton.delegate').selection()
  if not line1 then
    line1 = vim.api.nvim_win_get_cursor(0)[1]
    line2 = line1
  end
  M.delegate({ kind = 'fix', line1 = line1, line2 = line2 })
end

---Explain the visual selection (in normal mode: the whole file); the answer is shown beside
---the code without taking focus.
function M.explain()
  local line1, line2 = require('baton.delegate').selection()
  M.delegate({ kind = 'explain', line1 = line1, line2 = line2 })
end

---The task of the hunk under the cursor, or nil (then the task moves let the user pick).
---@return string|nil
local function task_here()
  local h = require('baton.diff').hunk_at()
  ---@diagnostic disable-next-line: need-check-nil (the `h and` guards it)
  return h and h.task or nil
end

---Reply to a task: the one whose hunk is under the cursor, or the one given, or pick one.
---@param task_id? string
function M.reply(task_id)
  require('baton.tasks').reply(task_id or task_here())
end

---Cancel a task: the one whose hunk is under the cursor, or the one given, or pick one.
---@param task_id? string
function M.cancel(task_id)
  require('baton.tasks').cancel(task_id or task_here())
end

---Inspect a task: the one whose hunk is under the cursor, or the one given, or pick one.
---@param task_id? string
function M.inspect(task_id)
  require('baton.tasks').inspect(task_id or task_here())
end

---Accept the hunk under the cursor; in visual mode, every hunk the selection touches.
---@param range? { [1]: integer, [2]: integer } lines (1-based, inclusive) instead
function M.accept(range)
  require('baton.diff').accept(range)
end

---Reject the hunk under the cursor; in visual mode, every hunk the selection touches.
---@param range? { [1]: integer, [2]: integer } lines (1-based, inclusive) instead
function M.reject(range)
  require('baton.diff').reject(range)
end

---Show the hunk under the cursor in a float (its old and new lines, as a diff).
function M.preview_hunk()
  require('baton.hunks').preview()
end

---Select the lines of the hunk under the cursor (the `ih` text object).
function M.select_hunk()
  require('baton.hunks').select()
end

---Every pending hunk (all tasks, all files) in the quickfix list, opened.
function M.setqflist()
  require('baton.hunks').setqflist()
end

---This buffer's hunks in the location list, opened.
function M.setloclist()
  require('baton.hunks').setloclist()
end

---Accept every hunk ready for review in the current buffer.
function M.accept_all()
  require('baton.diff').accept_all()
end

---Reject every hunk ready for review in the current buffer.
function M.reject_all()
  require('baton.diff').reject_all()
end

---Move the cursor to the next hunk (the `count`-th after it; default: `v:count1`).
---@param count? integer
function M.next_hunk(count)
  require('baton.diff').next(count)
end

---Move the cursor to the previous hunk (the `count`-th before it; default: `v:count1`).
---@param count? integer
function M.prev_hunk(count)
  require('baton.diff').prev(count)
end

---The hunks drawn in a buffer, in line order.
---@param buf? integer
---@return baton.HunkInfo[]
function M.hunks(buf)
  return require('baton.diff').hunks(buf)
end

---Answer the permission request shown (or the oldest of a task) with `vim.ui.select`.
---@param task_id? string
function M.permission(task_id)
  require('baton.permission').prompt(task_id)
end

---Pick a task, then open its diff, reply, cancel, retry or inspect it.
function M.tasks()
  require('baton.tasks').open()
end

return M
