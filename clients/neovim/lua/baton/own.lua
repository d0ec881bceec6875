--- Baton's own files: everything under its state folder (task folders, worktrees, an Explain
--- answer's `answer.md`). They never get a language server: the plugin does not attach
--- `baton lsp` to them (a second server would start, rooted wherever a marker is found above
--- the state folder), and a document the server shows from there opens as a read-only
--- scratch buffer (`buftype=nofile`), which no language server attaches to.

local M = {}

---Baton's state folder, found as the server finds it: `$BATON_HOME`, else
---`$XDG_STATE_HOME/baton`, else `~/.local/state/baton`.
---@return string
function M.state_home()
  local explicit = vim.env.BATON_HOME
  if explicit and explicit ~= '' then
    return vim.fs.normalize(explicit)
  end
  local xdg = vim.env.XDG_STATE_HOME
  local base = (xdg and xdg ~= '') and xdg
    or vim.fs.joinpath(vim.env.HOME or '~', '.local', 'state')
  return vim.fs.joinpath(vim.fs.normalize(base), 'baton')
end

---@param path string
---@param folder string
---@return boolean
local function inside(path, folder)
  folder = folder:gsub('/+$', '')
  return path == folder or vim.startswith(path, folder .. '/')
end

---The real path of a file that may not exist yet (its nearest existing parent resolved).
---@param path string
---@return string
local function real(path)
  path = vim.fs.normalize(path)
  local found = vim.uv.fs_realpath(path)
  if found then
    return found
  end
  local parent = vim.fs.dirname(path)
  if parent == path then
    return path
  end
  return vim.fs.joinpath(real(parent), vim.fs.basename(path))
end

---Is this path one of Baton's own files (under its state folder)?
---@param path string a file or folder
---@return boolean
function M.is_own(path)
  if path == '' then
    return false
  end
  local home = M.state_home()
  return inside(vim.fs.normalize(path), home) or inside(real(path), real(home))
end

---Show one of Baton's files read-only in a scratch buffer (`baton://<path in the state
---folder>`), in a window showing it already or a new split; focus moves only if asked.
---@param path string
---@param focus boolean
---@return integer buf
function M.show(path, focus)
  local rel = real(path):sub(#real(M.state_home()) + 2)
  local name = 'baton://' .. (rel ~= '' and rel or vim.fs.basename(path))
  local old = vim.fn.bufnr(name)
  if old > 0 then
    pcall(vim.api.nvim_buf_delete, old, { force = true })
  end
  local buf = vim.api.nvim_create_buf(false, true) -- buftype=nofile from the start
  vim.api.nvim_buf_set_name(buf, name)
  local ok, lines = pcall(vim.fn.readfile, path)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, ok and lines or {})
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].modifiable = false
  local ft = vim.filetype.match({ filename = path })
  if ft then
    vim.bo[buf].filetype = ft
  end
  local back = vim.api.nvim_get_current_win()
  vim.cmd('split')
  vim.api.nvim_win_set_buf(0, buf)
  if not focus then
    vim.api.nvim_set_current_win(back)
  end
  return buf
end

return M
