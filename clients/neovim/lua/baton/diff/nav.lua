--- Moving between the hunks drawn in the current buffer (`]x` / `[x`), with a count, through
--- the jump list, wrapping around as 'wrapscan' says.

local state = require('baton.diff.state')

local M = {}

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
  local hunks = state.hunks(0)
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

return M
