--- Delegating: a range of a buffer (or the whole file) and an instruction become a
--- `baton.delegate` command. The instruction comes from `vim.ui.input` unless given; the
--- code actions of `vim.lsp.buf.code_action()` come through here too (see `client.lua`).

local client = require('baton.client')

local M = {}

---@class baton.DelegateOpts
---@field kind? baton.Kind what the task is: delegate (default), fix, explain, tests
---@field instruction? string what the agent should do; nil: ask (for kind "delegate")
---@field worker? string a Baton profile for this task (default: the configured worker)
---@field model? string a model for this task
---@field line1? integer first line of the range (1-based); nil: the whole file
---@field line2? integer last line of the range (1-based, inclusive)
---@field buf? integer default: the current buffer

---@param buf integer
---@param first integer 0-based
---@param last integer 0-based, inclusive
---@return table[] LSP diagnostics
function M.diagnostics(buf, first, last)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    local stop = d.end_lnum or d.lnum
    if d.lnum <= last and stop >= first then
      local lsp = d.user_data and d.user_data.lsp
      if type(lsp) == 'table' and lsp.range and lsp.message then
        table.insert(out, lsp)
      else
        local item = {
          range = {
            start = { line = d.lnum, character = d.col or 0 },
            ['end'] = { line = stop, character = d.end_col or d.col or 0 },
          },
          message = d.message,
          severity = d.severity,
          source = d.source,
        }
        if type(d.code) == 'string' or type(d.code) == 'number' then
          item.code = d.code
        end
        if stop == d.lnum and item.range['end'].character < item.range.start.character then
          item.range['end'].character = item.range.start.character
        end
        table.insert(out, item)
      end
    end
  end
  return out
end

---@param where string
---@param on_text fun(text: string)
function M.ask(where, on_text)
  vim.ui.input(
    { prompt = string.format('Baton: what should the agent do with %s? ', where) },
    function(text)
      if text and vim.trim(text) ~= '' then
        on_text(text)
      end
    end
  )
end

---@param c vim.lsp.Client
---@param args table
---@param buf integer
local function send(c, args, buf)
  client.command(c, 'baton.delegate', args, function(result)
    if type(result) ~= 'table' or not result.taskId or result.taskId == vim.NIL then
      return
    end
    vim.notify(
      string.format('Baton: delegated "%s" (%s)', result.title or '', result.taskId),
      vim.log.levels.INFO,
      { title = 'Baton' }
    )
    pcall(vim.api.nvim_exec_autocmds, 'User', {
      pattern = 'BatonDelegated',
      modeline = false,
      data = result,
    })
  end, buf)
end

---The last line (0-based) an LSP range covers: an end at column 0 does not cover its line
---(the server's rule too, so the prompt names the lines the task gets).
---@param range lsp.Range
---@return integer
function M.last_line(range)
  local e = range['end']
  if e.character == 0 and e.line > range.start.line then
    return e.line - 1
  end
  return e.line
end

---@param buf integer
---@param args table
---@return string
local function where(buf, args)
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':t')
  if args.range then
    local a = args.range.start.line + 1
    local b = M.last_line(args.range) + 1
    return a == b and string.format('%s:%d', name, a) or string.format('%s:%d-%d', name, a, b)
  end
  return name
end

---Delegate a range of a buffer (or the whole file).
---@param opts? baton.DelegateOpts
function M.delegate(opts)
  opts = opts or {}
  local buf = opts.buf and opts.buf ~= 0 and opts.buf or vim.api.nvim_get_current_buf()
  local c = client.get(buf)
  if not c then
    return
  end
  local kind = opts.kind or 'delegate'
  local args = { uri = vim.uri_from_bufnr(buf), kind = kind } ---@type table
  if opts.line1 then
    local line2 = opts.line2 or opts.line1
    args.range = {
      start = { line = opts.line1 - 1, character = 0 },
      ['end'] = { line = line2, character = 0 },
    }
  end
  if kind == 'fix' then
    local cursor = vim.api.nvim_win_get_cursor(0)[1]
    local first, last = (opts.line1 or cursor) - 1, (opts.line2 or opts.line1 or cursor) - 1
    args.diagnostics = M.diagnostics(buf, first, last)
    if #args.diagnostics == 0 then
      vim.notify('Baton: no diagnostics here to fix', vim.log.levels.WARN)
      return
    end
    if not args.range then
      local stop = first
      for _, d in ipairs(args.diagnostics) do
        stop = math.max(stop, d.range['end'].line)
      end
      args.range = {
        start = { line = first, character = 0 },
        ['end'] = { line = stop + 1, character = 0 },
      }
    end
  end
  args.worker = opts.worker
  args.model = opts.model
  if opts.instruction and vim.trim(opts.instruction) ~= '' then
    args.instruction = opts.instruction
    send(c, args, buf)
  elseif kind == 'delegate' then
    M.ask(where(buf, args), function(text)
      args.instruction = text
      send(c, args, buf)
    end)
  else
    send(c, args, buf)
  end
end

---A code action's `baton.delegate` command: ask for the instruction when it has none.
---@param client_id integer
---@param args table the command's argument
---@param buf? integer
function M.from_action(client_id, args, buf)
  local c = vim.lsp.get_client_by_id(client_id)
  if not c then
    return
  end
  buf = buf and buf ~= 0 and buf or vim.uri_to_bufnr(args.uri)
  args = vim.deepcopy(args)
  if args.instruction == nil and (args.kind or 'delegate') == 'delegate' then
    M.ask(where(buf, args), function(text)
      args.instruction = text
      send(c, args, buf)
    end)
  else
    send(c, args, buf)
  end
end

---The lines of the visual selection (leaving visual mode), or nil outside visual mode.
---@return integer|nil line1
---@return integer|nil line2
function M.selection()
  local mode = vim.fn.mode()
  if mode == 'v' or mode == 'V' or mode == '\22' then
    local a, b = vim.fn.line('v'), vim.fn.line('.')
    if a > b then
      a, b = b, a
    end
    vim.api.nvim_feedkeys(vim.keycode('<Esc>'), 'nx', false)
    return a, b
  end
  return nil, nil
end

return M
