--- Hunks the gitsigns way: a preview float of the hunk under the cursor, the quickfix list of
--- every pending hunk (all tasks, all files) and the location list of this buffer's, and a
--- text object for the hunk's lines (`ih` in operator-pending and visual mode).

local diff = require('baton.diff')

local M = {}

---@param text string
---@return string[]
local function lines_of(text)
  if text == '' then
    return {}
  end
  text = text:gsub('\r\n', '\n'):gsub('\n$', '')
  return vim.split(text, '\n', { plain = true })
end

---The preview of a hunk: a header, then its old lines as `-` and its new lines as `+`.
---@param h baton.HunkInfo
---@return string[]
function M.preview_lines(h)
  local head = 'Baton: ' .. h.title
  if h.stale then
    head = head .. ' (edited since)'
  elseif not h.final then
    head = head .. ' (draft: still working)'
  end
  local out = { head }
  for _, line in ipairs(lines_of(h.old_text)) do
    table.insert(out, '-' .. line)
  end
  for _, line in ipairs(lines_of(h.new_text)) do
    table.insert(out, '+' .. line)
  end
  return out
end

---Show the hunk under the cursor in a float (filetype diff); it closes when the cursor moves.
---@return integer|nil buf
---@return integer|nil win
function M.preview()
  local h = diff.hunk_at()
  if not h then
    vim.notify('Baton: no hunk under the cursor', vim.log.levels.WARN)
    return nil, nil
  end
  local buf, win = vim.lsp.util.open_floating_preview(M.preview_lines(h), 'diff', {
    border = 'rounded',
    focus_id = 'baton-hunk',
    max_width = math.max(40, math.floor(vim.o.columns * 0.8)),
    max_height = math.max(5, math.floor(vim.o.lines * 0.6)),
  })
  vim.bo[buf].filetype = 'diff' -- a scratch buffer (nofile): no language server for it
  return buf, win
end

---A quickfix item's text for a hunk: its task's title and size, and its first new line.
---@param title string
---@param old string
---@param new string
---@return string
local function item_text(title, old, new)
  local o, n = lines_of(old), lines_of(new)
  local first = vim.trim(n[1] or o[1] or '')
  return string.format('%s (-%d +%d) %s', title, #o, #n, first)
end

---The location list items of a buffer's hunks, in line order.
---@param buf? integer default: the current buffer
---@return vim.quickfix.entry[]
function M.buffer_items(buf)
  buf = buf and buf ~= 0 and buf or vim.api.nvim_get_current_buf()
  local items = {}
  for _, h in ipairs(diff.hunks(buf)) do
    table.insert(items, {
      bufnr = buf,
      lnum = h.row + 1,
      end_lnum = h.end_row + 1,
      col = 1,
      text = item_text(h.title, h.old_text, h.new_text),
      type = h.final and 'I' or 'W',
    })
  end
  return items
end

---The quickfix items of every pending hunk of every task known, files not loaded too (their
---line as the server placed it), by file and line.
---@return vim.quickfix.entry[]
function M.all_items()
  local items = {}
  local seen = {} ---@type table<integer, boolean>
  for task_id, entry in pairs(diff.payloads) do
    local payload = entry.payload
    for _, file in ipairs(payload.files or {}) do
      local buf = diff.buffer_of(file.uri)
      if buf and diff.shown[buf] and diff.shown[buf][task_id] then
        if not seen[buf] then
          seen[buf] = true
          vim.list_extend(items, M.buffer_items(buf))
        end
      elseif type(file.uri) == 'string' then
        for _, hunk in ipairs(file.hunks or {}) do
          if hunk.state == 'pending' then
            local old = type(hunk.oldText) == 'string' and hunk.oldText or ''
            local new = type(hunk.newText) == 'string' and hunk.newText or ''
            table.insert(items, {
              filename = vim.uri_to_fname(file.uri),
              lnum = hunk.range.start.line + 1,
              col = 1,
              text = item_text(payload.title or task_id, old, new),
              type = (payload.final and payload.state == 'review') and 'I' or 'W',
            })
          end
        end
      end
    end
  end
  local function name(item)
    return item.filename or vim.api.nvim_buf_get_name(item.bufnr)
  end
  table.sort(items, function(a, b)
    local na, nb = name(a), name(b)
    return na < nb or (na == nb and a.lnum < b.lnum)
  end)
  return items
end

---Put every pending hunk in the quickfix list (title "Baton hunks") and open it.
---@param open? boolean default true
function M.setqflist(open)
  vim.fn.setqflist({}, ' ', { title = 'Baton hunks', items = M.all_items() })
  if open ~= false then
    vim.cmd('botright copen')
  end
end

---Put this buffer's hunks in the window's location list and open it.
---@param open? boolean default true
function M.setloclist(open)
  vim.fn.setloclist(0, {}, ' ', { title = 'Baton hunks', items = M.buffer_items(0) })
  if open ~= false then
    vim.cmd('lopen')
  end
end

---The text object: select the lines of the hunk under the cursor, linewise (for `dih`,
---`yih`, `vih`...). A pure addition selects the line it goes below.
function M.select()
  local h = diff.hunk_at()
  if not h then
    return
  end
  local mode = vim.fn.mode()
  if mode == 'v' or mode == 'V' or mode == '\22' then
    vim.cmd('normal! \27') -- leave visual mode; the selection is made again below
  end
  vim.cmd(string.format('normal! %dGV%dG', h.row + 1, h.end_row + 1))
end

return M
