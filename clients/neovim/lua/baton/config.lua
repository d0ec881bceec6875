--- The configuration of the Baton plugin: its defaults, its type, and the merge of the
--- user's options (`require("baton").setup(opts)`). Every field is documented in `:h baton-config`.

---@alias baton.Kind 'delegate'|'fix'|'explain'|'tests'

---@class baton.Keymaps
---Keys set buffer-local while a buffer shows hunks ready for review, removed when none is
---left. `false` (or an empty string) leaves one unset. A buffer-local mapping that is not
---Baton's is never replaced.
---@field accept string|false accept the hunk under the cursor
---@field reject string|false reject the hunk under the cursor
---@field accept_all string|false accept every hunk shown in the buffer
---@field reject_all string|false reject every hunk shown in the buffer
---@field next string|false jump to the next hunk
---@field prev string|false jump to the previous hunk
---@field preview string|false show the hunk under the cursor in a float
---@field textobj string|false the hunk's lines as a text object (operator-pending, visual)

---@class baton.StatusIcons
---@field running string
---@field needs_input string
---@field review string
---@field failed string
---@field unsandboxed string before "unsandboxed" or "refused" when agents run without a sandbox

---@class baton.Config
---The command that runs the language server; nil: `baton lsp` with `baton` found on PATH,
---then in `$VIRTUAL_ENV/bin` and in the workspace's `.venv/bin`.
---@field cmd string[]|nil
---Files or folders that mark a workspace root (the server is started per root).
---@field root_markers string[]
---Start or attach the server for every file buffer under a root; false: only on `:Baton`.
---@field auto_attach boolean
---Only these filetypes get the server attached automatically (nil: all).
---@field filetypes string[]|nil
---Default worker (a Baton profile name, e.g. "claude"); nil: the broker's default.
---@field worker string|nil
---Default model for the worker; nil: the worker's own default.
---@field model string|nil
---Rules appended to every brief, one line each.
---@field brief_rules string[]
---Buffer-local keys for reviewing hunks; false: none (use the <Plug> maps or :Baton).
---@field keymaps baton.Keymaps|false
---Show a short hint at the end of each hunk's first line.
---@field hint boolean
---Highlight the changed part of a changed line (cheap: common prefix and suffix).
---@field word_diff boolean
---Characters in the sign column: a line the hunk replaces or removes, and the line below
---which a pure addition goes.
---@field signs { change: string, delete: string, add: string }
---`vim.notify` when a task needs input, is ready for review or fails.
---@field notify boolean
---What `require("baton").status()` shows for each count (a count of zero is left out).
---@field status_icons baton.StatusIcons
---Show the server's code lenses (Accept | Reject) too; the inline diff already has them.
---@field codelens boolean
---Be the IDE of Claude Code sessions in a terminal: the server writes a lock file Claude Code
---finds (`/ide`), and Claude Code's proposed edits arrive as tasks in review here.
---@field claude_ide boolean

local M = {}

---@type baton.Config
M.defaults = {
  cmd = nil,
  root_markers = { '.git' },
  auto_attach = true,
  filetypes = nil,
  worker = nil,
  model = nil,
  brief_rules = {},
  keymaps = {
    accept = '<leader>ba',
    reject = '<leader>br',
    accept_all = '<leader>bA',
    reject_all = '<leader>bR',
    next = ']x',
    prev = '[x',
    preview = '<leader>bp',
    textobj = 'ih',
  },
  hint = true,
  word_diff = true,
  signs = { change = '┃', delete = '▁', add = '┃' },
  notify = true,
  status_icons = {
    running = '▶',
    needs_input = '?',
    review = '✓',
    failed = '✗',
    unsandboxed = '⚠',
  },
  codelens = false,
  claude_ide = true,
}

---@type baton.Config
M.current = vim.deepcopy(M.defaults)

---Raise a clear error for an option of the wrong type (works on Neovim 0.10 and later).
---@param name string
---@param value any
---@param expected type
---@param optional? boolean nil is allowed
---@param falsy? boolean false is allowed
local function check(name, value, expected, optional, falsy)
  if (value == nil and optional) or (value == false and falsy) then
    return
  end
  if type(value) ~= expected then
    error(
      string.format('baton.setup: %s must be a %s, got %s', name, expected, vim.inspect(value)),
      3
    )
  end
end

---@param opts? table partial baton.Config
---@return baton.Config
function M.set(opts)
  opts = opts or {}
  check('opts', opts, 'table')
  local merged = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts)
  if opts.keymaps == false then
    merged.keymaps = false
  end
  check('cmd', merged.cmd, 'table', true)
  check('root_markers', merged.root_markers, 'table')
  check('auto_attach', merged.auto_attach, 'boolean')
  check('filetypes', merged.filetypes, 'table', true)
  check('worker', merged.worker, 'string', true)
  check('model', merged.model, 'string', true)
  check('brief_rules', merged.brief_rules, 'table')
  check('keymaps', merged.keymaps, 'table', false, true)
  check('hint', merged.hint, 'boolean')
  check('word_diff', merged.word_diff, 'boolean')
  check('notify', merged.notify, 'boolean')
  check('codelens', merged.codelens, 'boolean')
  check('claude_ide', merged.claude_ide, 'boolean')
  M.current = merged
  return merged
end

---The settings the server reads (`initializationOptions` and `didChangeConfiguration`).
---@return table
function M.server_settings()
  local c = M.current
  return {
    baton = {
      worker = c.worker or vim.NIL,
      model = c.model or vim.NIL,
      briefRules = c.brief_rules,
      claudeIde = c.claude_ide,
      -- ACP permission prompts are drawn by the plugin (baton.permission), not as messages
      permissionPrompts = 'inline',
    },
  }
end

return M
