--- Decisions on the hunks drawn: accept or reject the hunk under the cursor, those a range of
--- lines (or the visual selection) touches, or every final hunk in the buffer. Each goes to the
--- server that sent the hunk's task as `baton.accept` / `baton.reject`; an accept the server
--- calls a conflict offers the ways to settle it (`baton.resolve`).

local state = require('baton.diff.state')

local M = {}

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
    end, state.hunks_in(range[1], range[2]))
    if #finals == 0 then
      vim.notify('Baton: no hunk ready for review in these lines', vim.log.levels.WARN)
    else
      decide(verb, finals)
    end
    return
  end
  local h = state.hunk_at()
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
  end, state.hunks(0))
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

---Accept every final hunk in the current buffer.
function M.accept_all()
  decide_all('accept')
end

---Reject every final hunk in the current buffer.
function M.reject_all()
  decide_all('reject')
end

return M
