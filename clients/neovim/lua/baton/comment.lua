--- Talk back from the diff: a comment on the hunk under the cursor (or on lines), typed in a
--- float, goes to the task's agent as its next turn (`baton.revise`); so does the reason of
--- a rejected hunk. The new result comes back as a diff whose unchanged hunks keep their
--- decisions; the hunks new since the last review are marked `revised`.

local M = {}

---@class baton.CommentTarget
---@field task string
---@field client_id integer
---@field uri string
---@field line1 integer 1-based
---@field line2 integer 1-based, inclusive
---@field hunk? string the hunk id

---What a comment from here is about: the hunk under the cursor, else the lines given (or the
---cursor's line) of a buffer showing a task's hunks.
---@param range? { [1]: integer, [2]: integer }
---@return baton.CommentTarget|nil
function M.target(range)
  local diff = require('baton.diff')
  local buf = vim.api.nvim_get_current_buf()
  local uri = vim.uri_from_bufnr(buf)
  local h = not range and diff.hunk_at() or nil
  if h then
    return {
      task = h.task,
      client_id = h.client_id,
      uri = uri,
      line1 = h.row + 1,
      line2 = h.end_row + 1,
      hunk = h.id,
    }
  end
  local any = diff.hunks(buf)[1]
  if not any then
    return nil
  end
  local line = vim.api.nvim_win_get_cursor(0)[1]
  range = range or { line, line }
  return {
    task = any.task,
    client_id = any.client_id,
    uri = uri,
    line1 = range[1],
    line2 = range[2],
  }
end

---Send a comment (or, with `reject`, a rejected hunk's reason) as the task's next turn.
---@param t baton.CommentTarget
---@param text string
---@param reject? boolean
function M.send(t, text, reject)
  local client = vim.lsp.get_client_by_id(t.client_id)
  if not client then
    vim.notify('Baton: the language server of this task is gone', vim.log.levels.ERROR)
    return
  end
  local args = { taskId = t.task, comments = {} } ---@type table
  if reject then
    args.rejections = { { hunkId = t.hunk, reason = text } }
  else
    args.comments = {
      { uri = t.uri, start = t.line1, ['end'] = t.line2, text = text, hunkId = t.hunk },
    }
  end
  require('baton.client').command(client, 'baton.revise', args, function(result)
    vim.api.nvim_exec_autocmds('User', { pattern = 'BatonRevise', data = result })
    vim.notify('Baton: comment sent to ' .. t.task .. '; the agent revises its change')
  end, vim.api.nvim_get_current_buf())
end

---Open a float to type the comment in; `<CR>` in normal mode (or `:w`) sends it, `q` or
---`<Esc>` closes it.
---@param t baton.CommentTarget
---@param reject? boolean
---@return integer buf, integer win
function M.float(t, reject)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].buftype = 'acwrite'
  vim.api.nvim_buf_set_name(buf, 'baton-comment://' .. t.task .. '/' .. tostring(buf))
  local width = math.max(40, math.floor(vim.o.columns * 0.6))
  local what = reject and 'why reject this hunk' or 'comment on'
  local where = t.hunk and ('hunk ' .. t.hunk) or string.format('lines %d-%d', t.line1, t.line2)
  local win = vim.api.nvim_open_win(buf, true, {
    relative = 'cursor',
    row = 1,
    col = 0,
    width = width,
    height = 5,
    border = 'rounded',
    title = string.format(' Baton: %s %s (<CR> sends) ', what, where),
  })
  local function close()
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_close(win, true)
    end
  end
  local function submit()
    local text = vim.trim(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n'))
    vim.bo[buf].modified = false
    close()
    if text ~= '' then
      M.send(t, text, reject)
    end
  end
  vim.keymap.set('n', '<CR>', submit, { buffer = buf, desc = 'Baton: send the comment' })
  vim.keymap.set('n', 'q', close, { buffer = buf, desc = 'Baton: close without sending' })
  vim.keymap.set('n', '<Esc>', close, { buffer = buf, desc = 'Baton: close without sending' })
  vim.api.nvim_create_autocmd('BufWriteCmd', { buffer = buf, callback = submit })
  vim.cmd('startinsert')
  return buf, win
end

---`:Baton comment [text]`: comment on the hunk under the cursor (or the range's lines).
---@param range? { [1]: integer, [2]: integer }
---@param text? string
function M.comment(range, text)
  local t = M.target(range)
  if not t then
    vim.notify('Baton: no task has hunks in this buffer', vim.log.levels.WARN)
    return
  end
  if text and vim.trim(text) ~= '' then
    M.send(t, text)
  else
    M.float(t)
  end
end

---`:Baton reject_why [reason]`: reject the hunk under the cursor and say why to the agent.
---@param text? string
function M.reject_why(text)
  local h = require('baton.diff').hunk_at()
  if not h then
    vim.notify('Baton: no hunk under the cursor', vim.log.levels.WARN)
    return
  end
  local t = M.target()
  assert(t)
  if text and vim.trim(text) ~= '' then
    M.send(t, text, true)
  else
    M.float(t, true)
  end
end

---`:Baton step_back [turn]`: show an earlier turn's result of the task whose hunks this buffer
---shows (each revision keeps the result reviewed before it); without a turn, pick one.
---@param turn? integer
function M.step_back(turn)
  local t = M.target()
  ---@diagnostic disable-next-line: need-check-nil (the `t and` guards it)
  local client = t and vim.lsp.get_client_by_id(t.client_id)
  if not t or not client then
    vim.notify('Baton: no task has hunks in this buffer', vim.log.levels.WARN)
    return
  end
  local command = require('baton.client').command
  local function go(n)
    command(client, 'baton.stepBack', { taskId = t.task, turn = n }, function()
      vim.notify(string.format('Baton: %s shows its turn %d result', t.task, n))
    end)
  end
  if turn then
    go(turn)
    return
  end
  command(client, 'baton.checkpoints', { taskId = t.task }, function(result)
    local others = vim.tbl_filter(function(c)
      return not c.shown and c.commit ~= nil
    end, result.turns or {})
    if #others == 0 then
      vim.notify('Baton: ' .. t.task .. ' has no other turn to step back to', vim.log.levels.WARN)
      return
    end
    vim.ui.select(others, {
      prompt = 'Baton: show the result of turn',
      format_item = function(c)
        return string.format('turn %d (%s)', c.turn, c.commit:sub(1, 10))
      end,
    }, function(choice)
      if choice then
        go(choice.turn)
      end
    end)
  end)
end

return M
