-- LuaRocks spec of Baton's Neovim plugin: this folder (clients/neovim) of the Baton repository.
--
-- rocks.nvim installs it by name once it is on the LuaRocks dev manifest
-- (`:Rocks install baton.nvim scm`); LuaRocks itself takes it by name, or straight from this
-- file in a clone (`luarocks make` here). A built rock holds the `baton` modules and the
-- `plugin/` and `doc/` folders (help tags included), as rocks.nvim expects of a plugin.
-- tests/e2e/test_neovim_rockspec.py keeps the module list equal to the files in lua/.
rockspec_format = '3.0'
package = 'baton.nvim'
version = 'scm-1'

source = {
  url = 'git+https://github.com/baton-lsp/baton',
  -- the plugin is a subfolder of the repository's clone
  dir = 'baton/clients/neovim',
}

description = {
  summary = 'Delegate work to coding-agent CLIs; review their diffs inline, hunk by hunk',
  detailed = [[
A thin client of `baton lsp`, Baton's language server: delegate a selection to Claude
Code, Codex, OpenCode, Gemini CLI or Pi without leaving Neovim, watch the task in the
statusline, and accept or reject its diff hunk by hunk. Needs Neovim 0.10 or later and
the `baton` command (the `baton-lsp` Python package).]],
  homepage = 'https://github.com/baton-lsp/baton',
  license = 'MIT',
  labels = { 'neovim', 'neovim-plugin', 'lsp', 'ai', 'coding-agent', 'code-review' },
}

dependencies = {
  'lua >= 5.1',
}

build = {
  type = 'builtin',
  modules = {
    ['baton'] = 'lua/baton/init.lua',
    ['baton.ask'] = 'lua/baton/ask.lua',
    ['baton.client'] = 'lua/baton/client.lua',
    ['baton.command'] = 'lua/baton/command.lua',
    ['baton.comment'] = 'lua/baton/comment.lua',
    ['baton.complete'] = 'lua/baton/complete.lua',
    ['baton.config'] = 'lua/baton/config.lua',
    ['baton.dashboard'] = 'lua/baton/dashboard.lua',
    ['baton.delegate'] = 'lua/baton/delegate.lua',
    ['baton.diff'] = 'lua/baton/diff/init.lua',
    ['baton.diff.actions'] = 'lua/baton/diff/actions.lua',
    ['baton.diff.keymaps'] = 'lua/baton/diff/keymaps.lua',
    ['baton.diff.nav'] = 'lua/baton/diff/nav.lua',
    ['baton.diff.render'] = 'lua/baton/diff/render.lua',
    ['baton.diff.state'] = 'lua/baton/diff/state.lua',
    ['baton.health'] = 'lua/baton/health.lua',
    ['baton.hunks'] = 'lua/baton/hunks.lua',
    ['baton.message'] = 'lua/baton/message.lua',
    ['baton.own'] = 'lua/baton/own.lua',
    ['baton.permission'] = 'lua/baton/permission.lua',
    ['baton.plan'] = 'lua/baton/plan.lua',
    ['baton.reload'] = 'lua/baton/reload.lua',
    ['baton.resolve'] = 'lua/baton/resolve.lua',
    ['baton.status'] = 'lua/baton/status.lua',
    ['baton.tasks'] = 'lua/baton/tasks.lua',
    ['baton.transcript'] = 'lua/baton/transcript.lua',
    ['baton.undo'] = 'lua/baton/undo.lua',
  },
  copy_directories = { 'plugin', 'doc' },
}
