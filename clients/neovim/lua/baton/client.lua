--- The language-server side: finding `baton lsp`, starting or attaching it for a buffer,
--- and sending `workspace/executeCommand` requests. One server runs per workspace root
--- (`vim.lsp.start` reuses it for every buffer under that root).

local config = require('baton.config')

local M = {}

M.name = 'baton'

local has_011 = vim.fn.has('nvim-0.11') == 1

---The command that starts the server, or nil and why it was not found.
---@param root? string a workspace root, to look for its `.venv/bin/baton`
---@return string[]|nil cmd
---@return string|nil problem
function M.cmd(root)
  local c = config.current
  if c.cmd then
    if vim.fn.executable(c.cmd[1]) == 1 then
      return c.cmd, nil
    end
    return nil, string.format('cmd[1] %q (from setup) is not executable', c.cmd[1])
  end
  local found = vim.fn.exepath('baton')
  if found == '' then
    local candidates = {}
    if vim.env.VIRTUAL_ENV then
      table.insert(candidates, vim.fs.joinpath(vim.env.VIRTUAL_ENV, 'bin', 'baton'))
    end
    if root then
      table.insert(candidates, vim.fs.joinpath(root, '.venv', 'bin', 'baton'))
    end
    for _, path in ipairs(candidates) do
      if vim.fn.executable(path) == 1 then
        found = path
        break
      end
    end
  end
  if found == '' then
    return nil, '`baton` is not on PATH (pip install baton-lsp, or set cmd in setup())'
  end
  return { found, 'lsp' }, nil
end

---The same program with another subcommand (`baton --version`, `baton doctor --json`).
---@param cmd string[] the server command
---@param ... string
---@return string[]
function M.sibling(cmd, ...)
  local out = vim.list_slice(cmd, 1, #cmd)
  if out[#out] == 'lsp' then
    table.remove(out)
  end
  vim.list_extend(out, { ... })
  return out
end

---The workspace root of a buffer, or nil when it has none (or is not a file).
---@param buf integer
---@return string|nil
function M.root(buf)
  if not vim.api.nvim_buf_is_valid(buf) or vim.bo[buf].buftype ~= '' then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' or name:match('^%a[%w+.-]*://') then
    return nil
  end
  local own = require('baton.own')
  if own.is_own(name) then
    return nil -- Baton's own files (an Explain answer, a worktree) get no server
  end
  local root = vim.fs.root(buf, config.current.root_markers)
  if root and own.is_own(root) then
    return nil
  end
  return root
end

---@type table<string, boolean>
local warned = {}

---@param ... string
local function notify_once(...)
  local msg = table.concat({ ... })
  if not warned[msg] then
    warned[msg] = true
    vim.notify('Baton: ' .. msg, vim.log.levels.ERROR)
  end
end

---The handlers of the server's notifications (set per client).
---@return table<string, function>
local function handlers()
  local out = {
    ['baton/diff'] = function(_, params, ctx)
      require('baton.diff').on_diff(ctx.client_id, params)
    end,
    ['baton/status'] = function(_, params, ctx)
      require('baton.status').on_status(ctx.client_id, params)
    end,
    ['baton/tasks'] = function(_, params, ctx)
      require('baton.status').on_tasks(ctx.client_id, params)
    end,
    ['baton/permission'] = function(_, params, ctx)
      require('baton.permission').on_permission(ctx.client_id, params)
    end,
    ['baton/transcript'] = function(_, params, ctx)
      require('baton.transcript').on_transcript(ctx.client_id, params)
    end,
    ['baton/plan'] = function(_, params, ctx)
      require('baton.plan').on_plan(ctx.client_id, params)
    end,
    -- a document of Baton's own (an Explain answer) opens as a scratch buffer: no server
    ['window/showDocument'] = function(err, params, ctx)
      local uri = type(params) == 'table' and params.uri or nil
      local own = require('baton.own')
      -- (params is a table here: uri came from it)
      ---@diagnostic disable-next-line: need-check-nil
      if type(uri) == 'string' and uri:match('^file:') and not params.external then
        local fname = vim.uri_to_fname(uri)
        if own.is_own(fname) then
          own.show(fname, params.takeFocus == true)
          return { success = true }
        end
      end
      return vim.lsp.handlers['window/showDocument'](err, params, ctx)
    end,
  }
  if not config.current.codelens then
    out['workspace/codeLens/refresh'] = function()
      return vim.NIL
    end
  end
  return out
end

---Client-side commands: code actions run through these before they reach the server.
---@return table<string, function>
local function commands()
  return {
    ['baton.delegate'] = function(command, ctx)
      local args = (command.arguments or {})[1]
      if type(args) == 'table' then
        require('baton.delegate').from_action(ctx.client_id, args, ctx.bufnr)
      end
    end,
    -- "Ask Baton…" carries no question: ask for it here (free text).
    ['baton.ask'] = function(command, ctx)
      local args = (command.arguments or {})[1]
      if type(args) == 'table' then
        require('baton.ask').from_action(ctx.client_id, args, ctx.bufnr)
      end
    end,
    -- "Reply to <title>" carries no text: ask for it here (free text), not with the
    -- server's pick list of ready-made answers.
    ['baton.reply'] = function(command, ctx)
      local args = (command.arguments or {})[1]
      if type(args) ~= 'table' or type(args.taskId) ~= 'string' then
        return
      end
      if args.text then
        local c = vim.lsp.get_client_by_id(ctx.client_id)
        if c then
          M.command(c, 'baton.reply', args)
        end
      else
        require('baton.tasks').reply(args.taskId)
      end
    end,
  }
end

---Start (or reuse) the server for a buffer and attach it.
---@param buf? integer default: the current buffer
---@param quiet? boolean do not report a missing root or server
---@return integer|nil client_id
function M.attach(buf, quiet)
  buf = buf and buf ~= 0 and buf or vim.api.nvim_get_current_buf()
  local root = M.root(buf)
  if not root then
    if not quiet then
      vim.notify('Baton: this buffer is not a file in a workspace', vim.log.levels.WARN)
    end
    return nil
  end
  local cmd, problem = M.cmd(root)
  if not cmd then
    if not quiet then
      notify_once(problem or 'no server')
    end
    return nil
  end
  local settings = config.server_settings()
  return vim.lsp.start({
    name = M.name,
    cmd = cmd,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = settings,
    settings = settings,
    handlers = handlers(),
    commands = commands(),
    -- Edits reach the server at once, so a diff is always placed in the current text.
    flags = { debounce_text_changes = 0 },
    on_exit = function(_, _, client_id)
      vim.schedule(function()
        require('baton.diff').forget_client(client_id)
        require('baton.status').forget_client(client_id)
        require('baton.permission').forget_client(client_id)
        require('baton.plan').forget_client(client_id)
      end)
    end,
  }, { bufnr = buf })
end

---Should this buffer get the server without being asked?
---@param buf integer
---@return boolean
function M.wanted(buf)
  local fts = config.current.filetypes
  return fts == nil or vim.tbl_contains(fts, vim.bo[buf].filetype)
end

---The Baton client attached to a buffer, attaching one if needed.
---@param buf? integer
---@return vim.lsp.Client|nil
function M.get(buf)
  buf = buf and buf ~= 0 and buf or vim.api.nvim_get_current_buf()
  local found = vim.lsp.get_clients({ name = M.name, bufnr = buf })[1]
  if found then
    return found
  end
  local id = M.attach(buf)
  return id and vim.lsp.get_client_by_id(id) or nil
end

---Every running Baton client.
---@return vim.lsp.Client[]
function M.all()
  return vim.lsp.get_clients({ name = M.name })
end

---Send a request once the client is initialized.
---@param client vim.lsp.Client
---@param method string
---@param params table
---@param handler fun(err: table|nil, result: any)
---@param buf? integer
function M.request(client, method, params, handler, buf)
  local tries = 0
  local function send()
    if client.initialized then
      if has_011 then
        client:request(method, params, handler, buf)
      else
        client.request(method, params, handler, buf)
      end
      return
    end
    local stopped
    if has_011 then
      stopped = client:is_stopped()
    else
      stopped = client.is_stopped() ---@diagnostic disable-line: missing-parameter (0.10's API)
    end
    if stopped then
      handler({ message = 'the Baton server stopped' }, nil)
      return
    end
    tries = tries + 1
    if tries > 300 then
      handler({ message = 'the Baton server did not start in 30 s' }, nil)
      return
    end
    vim.defer_fn(send, 100)
  end
  send()
end

---Send a notification (Neovim 0.10 and 0.11+ spell the call differently).
---@param client vim.lsp.Client
---@param method string
---@param params table
function M.notify(client, method, params)
  if has_011 then
    client:notify(method, params)
  else
    client.notify(method, params)
  end
end

---Run a `baton.*` command on the server; errors are reported with `vim.notify`.
---@param client vim.lsp.Client
---@param name string e.g. "baton.accept"
---@param args table|nil the command's one object argument
---@param on_result? fun(result: any)
---@param buf? integer
function M.command(client, name, args, on_result, buf)
  local params = { command = name, arguments = args and { args } or {} }
  M.request(client, 'workspace/executeCommand', params, function(err, result)
    if err then
      vim.notify(
        string.format('Baton: %s: %s', name, err.message or tostring(err)),
        vim.log.levels.ERROR
      )
      return
    end
    if on_result then
      on_result(result)
    end
  end, buf)
end

return M
