--- `:checkhealth baton`: Neovim's version, the server (found, its version), the LSP client
--- (running, attached to this buffer), the Claude Code IDE integration (on or off, its lock
--- file, how to connect), the workers (from `baton doctor --json --cwd <root>`: the same
--- resolved profiles, user and project config included, that routing reads; the default
--- worker and why; an error when no real agent CLI can run as the default) and the sandbox
--- (from the same report: OK when agents run sandboxed, a warning when they run unsandboxed,
--- an error when the `sandbox = "require"` setting refuses them).

local M = {}

---@param cmd string[]
---@param any_exit? boolean the output counts whatever the exit code (doctor exits 1 on problems)
---@return boolean ok
---@return string output or error
local function run(cmd, any_exit)
  local ok, proc = pcall(vim.system, cmd, { text = true })
  if not ok then
    return false, tostring(proc)
  end
  local result = proc:wait(10000)
  if result.code ~= 0 and not (any_exit and (result.stdout or '') ~= '') then
    return false, vim.trim((result.stderr or '') .. (result.stdout or ''))
  end
  return true, result.stdout or ''
end

---Where Claude Code looks for IDE lock files: `$CLAUDE_CONFIG_DIR/ide`, else `~/.claude/ide`.
---@return string
function M.lock_dir()
  local base = vim.env.CLAUDE_CONFIG_DIR
  if base == nil or base == '' then
    base = vim.fs.joinpath(vim.fn.expand('~'), '.claude')
  end
  return vim.fs.joinpath(base, 'ide')
end

---The processes started by this Neovim, children and their children.
---@return table<integer, boolean>
local function descendants()
  local out, todo = {}, { vim.fn.getpid() }
  while #todo > 0 and vim.tbl_count(out) < 1000 do
    local pid = table.remove(todo)
    local ok, children = pcall(vim.api.nvim_get_proc_children, pid)
    for _, child in ipairs(ok and children or {}) do
      if not out[child] then
        out[child] = true
        table.insert(todo, child)
      end
    end
  end
  return out
end

---@class baton.IdeLock
---@field path string
---@field port integer
---@field ide_name string
---@field folders string[]

---The lock files written by this Neovim's Baton servers (never their token).
---@return baton.IdeLock[]
function M.ide_locks()
  local ours = descendants()
  local out = {}
  for _, path in ipairs(vim.fn.glob(vim.fs.joinpath(M.lock_dir(), '*.lock'), false, true)) do
    local port = tonumber(vim.fn.fnamemodify(path, ':t:r'))
    local ok, lines = pcall(vim.fn.readfile, path)
    local decoded, lock = false, nil
    if ok then
      decoded, lock = pcall(vim.json.decode, table.concat(lines, '\n'))
    end
    if port and decoded and type(lock) == 'table' and ours[tonumber(lock.pid) or -1] then
      local folders = type(lock.workspaceFolders) == 'table' and lock.workspaceFolders or {}
      table.insert(out, {
        path = path,
        port = port,
        ide_name = tostring(lock.ideName),
        folders = folders,
      })
    end
  end
  return out
end

---@param health table vim.health
---@param clients vim.lsp.Client[]
local function check_claude_ide(health, clients)
  health.start('Claude Code IDE')
  local dir = M.lock_dir()
  if not require('baton.config').current.claude_ide then
    health.info('off (claude_ide = false in setup()): Claude Code cannot use Neovim as its IDE')
    return
  end
  if #clients == 0 then
    health.info('on; the lock file appears in ' .. dir .. ' once the language server runs')
    return
  end
  local locks = M.ide_locks()
  if #locks == 0 then
    health.warn('on, but no lock file of this Neovim in ' .. dir, {
      'The language server writes it once its broker has started; see :LspLog',
      'Claude Code finds it in $CLAUDE_CONFIG_DIR/ide (else ~/.claude/ide): both must agree',
    })
    return
  end
  for _, lock in ipairs(locks) do
    local what = string.format('"ideName": "%s", port %d', lock.ide_name, lock.port)
    health.ok(string.format('on: lock file %s (%s)', lock.path, what))
    health.info(
      string.format(
        'connect: run /ide inside Claude Code started in %s, or start it with'
          .. ' CLAUDE_CODE_SSE_PORT=%d claude',
        table.concat(lock.folders, ', '),
        lock.port
      )
    )
  end
end

---@param value any
---@return string|nil
local function text(value)
  if type(value) == 'string' and value ~= '' then
    return value
  end
  return nil
end

---The "Sandbox" section from `baton doctor --json`'s `sandbox` (see docs/reference/security.md).
---@param health table vim.health
---@param found any
function M.check_sandbox(health, found)
  health.start('Sandbox')
  if type(found) ~= 'table' then
    health.warn('`baton doctor --json` does not say how agents run (is the server older?)')
    return
  end
  local setting = string.format('sandbox = "%s"', text(found.setting) or 'auto')
  local advice = text(found.advice)
  local why = text(found.why) or 'no sandbox works here'
  if found.agents == 'sandboxed' then
    local version = text(found.version)
    local where = text(found.binary)
    health.ok(
      string.format(
        'agents run sandboxed: %s%s%s (%s)',
        text(found.kind) or '?',
        version and (' ' .. version) or '',
        where and (' at ' .. where) or '',
        setting
      )
    )
  elseif found.agents == 'refused' then
    health.error(
      string.format('agents are REFUSED: %s (%s)', why, setting),
      advice and { advice } or nil
    )
  elseif found.setting == 'off' then
    health.warn(
      string.format('agents run UNSANDBOXED, with all you can reach (%s)', setting),
      advice and { advice } or nil
    )
  else
    health.warn(
      string.format('agents run UNSANDBOXED, with all you can reach: %s (%s)', why, setting),
      advice and { advice } or nil
    )
  end
end

function M.check()
  local health = vim.health
  local client = require('baton.client')

  health.start('Neovim')
  if vim.fn.has('nvim-0.10') == 1 then
    local v = vim.version()
    health.ok(string.format('Neovim %d.%d.%d', v.major, v.minor, v.patch))
  else
    health.error('Baton needs Neovim 0.10 or later')
  end

  health.start('Server')
  local buf = vim.api.nvim_get_current_buf()
  local cmd, problem = client.cmd(client.root(buf))
  if not cmd then
    health.error(problem or 'the server was not found', {
      'Install Baton (pip install baton-lsp) so that `baton` is on PATH',
      'or set `cmd` in require("baton").setup({ cmd = { "/path/to/baton", "lsp" } })',
    })
    return
  end
  health.ok('command: ' .. table.concat(cmd, ' '))
  local ok, out = run(client.sibling(cmd, '--version'))
  if ok then
    health.ok('version: ' .. vim.trim(out))
  else
    health.error('`' .. table.concat(client.sibling(cmd, '--version'), ' ') .. '` failed: ' .. out)
  end

  health.start('Language server')
  local clients = client.all()
  if #clients == 0 then
    health.warn('not running', {
      'It starts when you open a file under a workspace root ('
        .. table.concat(require('baton.config').current.root_markers, ', ')
        .. '), or with :Baton attach',
    })
  else
    for _, c in ipairs(clients) do
      local state = c.initialized and 'running' or 'starting'
      health.ok(string.format('client %d %s for %s', c.id, state, c.root_dir or '?'))
    end
    local attached = 0
    for _, c in ipairs(clients) do
      attached = attached + vim.tbl_count(c.attached_buffers or {})
    end
    if attached > 0 then
      health.ok(string.format('attached to %d buffer%s', attached, attached == 1 and '' or 's'))
    else
      health.warn('attached to no buffer')
    end
  end

  check_claude_ide(health, clients)

  health.start('Workers')
  local doctor = client.sibling(cmd, 'doctor', '--json')
  local root = client.root(buf)
  if root then
    vim.list_extend(doctor, { '--cwd', root })
  end
  local dok, dout = run(doctor, true)
  local decoded_ok, report = pcall(vim.json.decode, dout)
  if not decoded_ok or type(report) ~= 'table' then
    health.error('`baton doctor --json` failed: ' .. (dok and 'not JSON' or dout))
    return
  end
  for _, p in ipairs(report.profiles or {}) do
    local label = string.format('%s (%s)', p.name, p.provider)
    if p.ok then
      local version = p.version ~= vim.NIL and p.version or ''
      health.ok(string.format('worker %s: %s', label, version))
    else
      local problems = p.problems ~= vim.NIL and p.problems or {}
      health.warn(string.format('worker %s: %s', label, table.concat(problems, '; ')))
    end
    for _, note in ipairs(p.notes ~= vim.NIL and p.notes or {}) do
      health.info(string.format('worker %s: %s', p.name, note))
    end
  end
  for _, cli in ipairs(report.clis or {}) do
    if not cli.ok then
      health.info(
        string.format('%s: %s', cli.provider, cli.advice ~= vim.NIL and cli.advice or 'not usable')
      )
    end
  end
  local reason = report.default_reason ~= vim.NIL and report.default_reason or ''
  if report.default ~= nil and report.default ~= vim.NIL then
    health.info(string.format('default worker: %s (%s)', report.default, reason))
  else
    health.info('no default worker: ' .. reason)
  end
  -- `workers_ok`: the workers alone (`ok` is false too when the sandbox refuses agents).
  local workers_ok = report.workers_ok
  if workers_ok == nil or workers_ok == vim.NIL then
    workers_ok = report.ok
  end
  if not workers_ok then
    health.error('no real agent CLI can run as the default worker', {
      'Run `baton doctor` for what to install or log in to',
      'then `baton init` writes your config with the agent found',
    })
  end

  M.check_sandbox(health, report.sandbox)
end

return M
