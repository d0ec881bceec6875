-- A hunk that conflicts with the user's edits, settled one of four ways: keep mine (reject
-- it), take theirs (the agent's lines replace the user's at its place: an undoable edit,
-- like any accept), a merge view (diff mode beside the agent's version of the file, in a
-- read-only scratch buffer), or ask the agent to redo it against the current text (a new
-- turn; the task runs again and its new result replaces the hunk).

local M = {}

---@alias baton.Resolution 'mine'|'theirs'|'merge'|'redo'

---The choices, in the order offered.
---@type { [1]: baton.Resolution, [2]: string }[]
M.CHOICES = {
  { 'mine', 'Keep mine (reject the hunk)' },
  { 'theirs', "Take theirs (the agent's lines replace yours)" },
  { 'merge', 'Open a merge view' },
  { 'redo', 'Ask the agent to redo it against your text' },
}

---@param id integer
---@return vim.lsp.Client|nil
local function client_of(id)
  return vim.lsp.get_client_by_id(id)
end

---Diff mode between the buffer and the agent's version of its file (a read-only scratch
---buffer in a vertical split).
---@param h baton.HunkInfo
---@param buf integer
function M.merge_view(h, buf)
  local client = client_of(h.client_id)
  if not client then
    return
  end
  local uri = vim.uri_from_bufnr(buf)
  local args = { taskId = h.task, path = uri }
  require('baton.client').command(client, 'baton.proposed', args, function(r)
    if type(r) ~= 'table' or type(r.text) ~= 'string' then
      return
    end
    local name = string.format('baton://%s/%s', h.task, r.path)
    local scratch = vim.fn.bufnr(name)
    if scratch == -1 then
      scratch = vim.api.nvim_create_buf(false, true)
      vim.api.nvim_buf_set_name(scratch, name)
    end
    local lines = vim.split(r.text, '\n', { plain = true })
    if lines[#lines] == '' then
      table.remove(lines)
    end
    vim.bo[scratch].modifiable = true
    vim.api.nvim_buf_set_lines(scratch, 0, -1, false, lines)
    vim.bo[scratch].buftype = 'nofile'
    vim.bo[scratch].bufhidden = 'wipe'
    vim.bo[scratch].modifiable = false
    vim.bo[scratch].filetype = vim.bo[buf].filetype
    local win = vim.fn.bufwinid(buf)
    if win ~= -1 then
      vim.api.nvim_set_current_win(win)
    end
    vim.cmd('diffthis')
    vim.cmd('rightbelow vertical sbuffer ' .. scratch)
    vim.cmd('diffthis')
    vim.api.nvim_exec_autocmds('User', { pattern = 'BatonMergeView', data = { buf = scratch } })
  end, buf)
end

---Settle hunk `h` of buffer `buf` one way.
---@param h baton.HunkInfo
---@param choice baton.Resolution
---@param buf? integer
function M.settle(h, choice, buf)
  buf = buf or vim.api.nvim_get_current_buf()
  if choice == 'merge' then
    M.merge_view(h, buf)
    return
  end
  local client = client_of(h.client_id)
  if not client then
    return
  end
  local args = { taskId = h.task, hunkId = h.id, choice = choice }
  require('baton.client').command(client, 'baton.resolve', args, function(r)
    if choice == 'redo' then
      vim.notify('Baton: the agent is redoing the change against your text', vim.log.levels.INFO)
    elseif type(r) == 'table' and r.conflicts and #r.conflicts > 0 then
      vim.notify('Baton: ' .. (r.conflicts[1].reason or 'still in conflict'), vim.log.levels.WARN)
    end
  end, buf)
end

---Offer the four ways (vim.ui.select) for hunk `h`.
---@param h baton.HunkInfo
---@param buf? integer
function M.offer(h, buf)
  buf = buf or vim.api.nvim_get_current_buf()
  local labels = vim.tbl_map(function(c)
    return c[2]
  end, M.CHOICES)
  vim.ui.select(labels, {
    prompt = string.format('Baton: this change of "%s" conflicts with your edits', h.title),
  }, function(_, idx)
    if idx then
      M.settle(h, M.CHOICES[idx][1], buf)
    end
  end)
end

---`:Baton resolve [mine|theirs|merge|redo]`: settle the conflicting hunk under the cursor.
---@param choice? string
function M.command(choice)
  local h = require('baton.diff').hunk_at()
  if not h then
    vim.notify('Baton: no hunk under the cursor', vim.log.levels.WARN)
    return
  end
  if not choice or choice == '' then
    M.offer(h)
    return
  end
  for _, c in ipairs(M.CHOICES) do
    if c[1] == choice then
      M.settle(h, choice)
      return
    end
  end
  vim.notify('Baton: resolve takes mine, theirs, merge or redo', vim.log.levels.ERROR)
end

---After an accept: offer the ways for the first hunk it called a conflict.
---@param hunks baton.HunkInfo[] the hunks the accept was for
---@param result table the answer of baton.accept
---@param buf integer
function M.after_accept(hunks, result, buf)
  if type(result) ~= 'table' or type(result.conflicts) ~= 'table' or #result.conflicts == 0 then
    return
  end
  local first = result.conflicts[1].hunkId
  for _, h in ipairs(hunks) do
    if h.id == first then
      vim.schedule(function()
        M.offer(h, buf)
      end)
      return
    end
  end
end

return M
