--- The review keys of the inline diff: buffer-local, set while a buffer shows final hunks and
--- removed when it shows none; a key the buffer already maps (another plugin's, yours) is left
--- alone.

local config = require('baton.config')
local state = require('baton.diff.state')

local M = {}

---Buffers with Baton's keymaps set: buffer → the { mode, lhs } set.
---@type table<integer, { [1]: string, [2]: string }[]>
local mapped = {}

---The key configured for an action, or nil when it is unset (or keymaps are off).
---@param keys baton.Keymaps|false
---@param name string
---@return string|nil
function M.lhs(keys, name)
  if not keys then
    return nil
  end
  local lhs = keys[name]
  if type(lhs) == 'string' and lhs ~= '' then
    return lhs
  end
  return nil
end

---Each buffer-local key: the function it runs (in `baton.diff`, else in `baton.hunks`), its
---description and its modes.
---@type table<string, { [1]: string, [2]: string, [3]: string[] }>
local ACTIONS = {
  accept = { 'accept', 'Baton: accept the hunk here (visual: those selected)', { 'n', 'x' } },
  reject = { 'reject', 'Baton: reject the hunk here (visual: those selected)', { 'n', 'x' } },
  accept_all = { 'accept_all', 'Baton: accept every hunk in this buffer', { 'n' } },
  reject_all = { 'reject_all', 'Baton: reject every hunk in this buffer', { 'n' } },
  next = { 'next', 'Baton: next hunk', { 'n' } },
  prev = { 'prev', 'Baton: previous hunk', { 'n' } },
  preview = { 'preview', 'Baton: preview the hunk under the cursor', { 'n' } },
  textobj = { 'select', 'Baton: the lines of the hunk under the cursor', { 'o', 'x' } },
}

---@param lhs string
---@return string
local function normalize(lhs)
  -- (vim.g's fields are any variable; the runtime's annotations name only some)
  local leader = vim.g['mapleader'] or '\\'
  local local_leader = vim.g['maplocalleader'] or '\\'
  lhs = lhs:gsub('<[Ll][Ee][Aa][Dd][Ee][Rr]>', leader)
  lhs = lhs:gsub('<[Ll][Oo][Cc][Aa][Ll][Ll][Ee][Aa][Dd][Ee][Rr]>', local_leader)
  return vim.keycode(lhs)
end

---Set or remove the buffer's keymaps so they exist exactly while it shows final hunks.
---@param buf integer
function M.update(buf)
  local want = state.has_final(buf) and config.current.keymaps
  if want and not mapped[buf] then
    local foreign = {} ---@type table<string, boolean> mode .. lhs
    for _, mode in ipairs({ 'n', 'x', 'o' }) do
      for _, m in ipairs(vim.api.nvim_buf_get_keymap(buf, mode)) do
        foreign[mode .. normalize(m.lhs)] = true
      end
    end
    local set = {}
    for name, action in pairs(ACTIONS) do
      local lhs = M.lhs(want, name)
      for _, mode in ipairs(lhs and action[3] or {}) do
        if not foreign[mode .. normalize(lhs)] then
          vim.keymap.set(mode, lhs, function()
            local fn = require('baton.diff')[action[1]] or require('baton.hunks')[action[1]]
            fn()
          end, { buffer = buf, desc = action[2] })
          table.insert(set, { mode, lhs })
        end
      end
    end
    mapped[buf] = set
  elseif not want and mapped[buf] then
    if vim.api.nvim_buf_is_valid(buf) then
      for _, m in ipairs(mapped[buf]) do
        pcall(vim.keymap.del, m[1], m[2], { buffer = buf })
      end
    end
    mapped[buf] = nil
  end
end

---A buffer is going away: forget the keys set in it.
---@param buf integer
function M.forget(buf)
  mapped[buf] = nil
end

return M
