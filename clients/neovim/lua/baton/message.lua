--- Notifications that fit the command line: a message longer than the room left there, or of
--- several lines, makes Neovim stop at a hit-enter prompt. `line()` keeps the first line of a
--- message, cut to fit, and names where the rest is (`:Baton inspect <id>`).

local M = {}

---The room for a message on the command line (display cells), never less than 20: the
---last line's `v:echospace` and the full lines above it when 'cmdheight' is more than 1.
---@return integer
function M.width()
  local room = tonumber(vim.v.echospace) or (vim.o.columns - 12)
  room = room + math.max(vim.o.cmdheight - 1, 0) * vim.o.columns
  return math.max(20, room)
end

---The first line of a text with something on it, its spaces squeezed; a `\n` written out
---as two characters (an agent's JSON error quoted as it was) ends a line too.
---@param text string
---@return string first
---@return boolean more the text has more lines after it
function M.first_line(text)
  local plain = text:gsub('\\r\\n', '\n'):gsub('\\n', '\n')
  local lines = vim.split(plain, '\r?\n')
  local first, found = '', nil
  for i, line in ipairs(lines) do
    local squeezed = vim.trim((line:gsub('%s+', ' ')))
    if squeezed ~= '' then
      first, found = squeezed, i
      break
    end
  end
  local more = false
  for i = (found or #lines) + 1, #lines do
    if vim.trim(lines[i]) ~= '' then
      more = true
      break
    end
  end
  return first, more
end

---Cut a string to at most `width` display cells, ending it with "…" when cut.
---@param text string
---@param width integer
---@return string
function M.cut(text, width)
  if vim.fn.strdisplaywidth(text) <= width then
    return text
  end
  local n = vim.fn.strchars(text)
  while n > 0 and vim.fn.strdisplaywidth(vim.fn.strcharpart(text, 0, n)) > width - 1 do
    n = n - 1
  end
  return vim.fn.strcharpart(text, 0, n) .. '…'
end

---A message as one line that fits the command line: its first line, and when anything was
---left out, `(more)` after it, e.g. "Baton: X failed: the build broke… (:Baton inspect ab12)".
---@param text string
---@param more? string where the whole message is shown
---@param width? integer default: `M.width()`
---@return string
function M.line(text, more, width)
  width = width or M.width()
  local first, rest = M.first_line(text)
  if not rest and vim.fn.strdisplaywidth(first) <= width then
    return first
  end
  local tail = more and (' (' .. more .. ')') or ''
  local room = width - vim.fn.strdisplaywidth(tail)
  local head = M.cut(first, math.max(room, 10))
  if rest and head:sub(-#'…') ~= '…' then
    -- the first line fits, the next ones are left out: say so within the room too
    head = vim.fn.strdisplaywidth(first) < room and first .. '…' or M.cut(first .. '…', room)
  end
  return head .. tail
end

return M
