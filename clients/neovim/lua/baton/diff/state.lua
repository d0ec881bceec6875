--- What the inline diff knows: the latest diff of each task, the hunks drawn in each buffer
--- (their lines followed by extmarks), and the queries over them (the hunks of a buffer in line
--- order, the one under the cursor, those a range of lines touches). Nothing here draws, maps a
--- key or talks to the server.

local M = {}

M.ns = vim.api.nvim_create_namespace('baton')
--- Invisible marks that follow each hunk's lines as the buffer changes.
M.ns_anchor = vim.api.nvim_create_namespace('baton.hunks')

--- States in which a task's diff is shown (a draft while working, the final one in review).
M.SHOWN = {
  preparing = true,
  running = true,
  verifying = true,
  needs_input = true,
  review = true,
}

---@class baton.Hunk
---@field task string task id
---@field id string hunk id
---@field client_id integer
---@field final boolean
---@field stale boolean the user changed these lines since the snapshot
---@field conflict boolean accept would call it a conflict with the user's edits
---@field anchor integer extmark id in `ns_anchor`
---@field marks integer[] extmark ids in `ns`
---@field title string the task's title
---@field revised? boolean new since the last review (after a comment's revision turn)
---@field old_text string the lines it replaces, as the snapshot had them
---@field new_text string the lines it proposes

---The latest diff of each task: task id → { client_id, payload }.
---@type table<string, { client_id: integer, payload: table }>
M.payloads = {}

---What is drawn: buffer → task id → hunks.
---@type table<integer, table<string, baton.Hunk[]>>
M.shown = {}

---The files of each task's latest diff shown (paths), kept after the task settles until
---`take_files` (a proposal's proposer writes them once it is applied).
---@type table<string, string[]>
M.files = {}

---The loaded buffer showing a file (a URI or a path), or nil (never loads one).
---@param uri string
---@return integer|nil
function M.buffer_of(uri)
  local fname = uri:match('^%a[%w+.-]*:') and vim.uri_to_fname(uri) or uri
  local real = vim.uv.fs_realpath(fname) or fname
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) then
      local name = vim.api.nvim_buf_get_name(buf)
      if name == fname or (name ~= '' and (vim.uv.fs_realpath(name) or name) == real) then
        return buf
      end
    end
  end
  return nil
end

---@class baton.HunkInfo
---@field task string
---@field id string
---@field final boolean
---@field stale boolean
---@field conflict boolean accept would call it a conflict with the user's edits
---@field row integer 0-based first line
---@field end_row integer 0-based last line (equal to row for a pure addition)
---@field title string
---@field client_id integer
---@field revised? boolean new since the last review (after a comment's revision turn)
---@field old_text string the lines it replaces, as the snapshot had them
---@field new_text string the lines it proposes

---The hunks drawn in a buffer, in line order.
---@param buf? integer
---@return baton.HunkInfo[]
function M.hunks(buf)
  buf = buf and buf ~= 0 and buf or vim.api.nvim_get_current_buf()
  local out = {}
  for _, hunks in pairs(M.shown[buf] or {}) do
    for _, h in ipairs(hunks) do
      local pos = vim.api.nvim_buf_get_extmark_by_id(buf, M.ns_anchor, h.anchor, { details = true })
      if pos[1] then
        local details = pos[3] or {}
        table.insert(out, {
          task = h.task,
          id = h.id,
          final = h.final,
          stale = h.stale,
          revised = h.revised,
          conflict = h.conflict,
          row = pos[1],
          end_row = details.end_row or pos[1],
          title = h.title,
          client_id = h.client_id,
          old_text = h.old_text,
          new_text = h.new_text,
        })
      end
    end
  end
  table.sort(out, function(a, b)
    return a.row < b.row or (a.row == b.row and a.id < b.id)
  end)
  return out
end

---The hunk on a line of the current buffer.
---@param row? integer 0-based; default: the cursor's line
---@return baton.HunkInfo|nil
function M.hunk_at(row)
  row = row or (vim.api.nvim_win_get_cursor(0)[1] - 1)
  for _, h in ipairs(M.hunks(0)) do
    if h.row <= row and row <= h.end_row then
      return h
    end
  end
  return nil
end

---The hunks a range of lines of the current buffer touches (1-based, inclusive).
---@param line1 integer
---@param line2 integer
---@return baton.HunkInfo[]
function M.hunks_in(line1, line2)
  return vim.tbl_filter(function(h)
    return h.row <= line2 - 1 and h.end_row >= line1 - 1
  end, M.hunks(0))
end

---Whether a buffer shows any final hunk (one the user can accept).
---@param buf integer
---@return boolean
function M.has_final(buf)
  for _, hunks in pairs(M.shown[buf] or {}) do
    for _, h in ipairs(hunks) do
      if h.final then
        return true
      end
    end
  end
  return false
end

---The files of a task's latest diff (paths), forgotten from now on.
---@param task_id string
---@return string[]
function M.take_files(task_id)
  local paths = M.files[task_id] or {}
  M.files[task_id] = nil
  return paths
end

return M
