--- Asking: a read-only question about a range of a buffer (or the whole file), the server's
--- `baton.ask`. A cheap worker answers it and changes nothing; the answer opens as any
--- Explain answer does (a markdown buffer beside the code, else a message). The question
--- comes from `vim.ui.input` unless given; the "Ask Baton…" code action comes through here
--- too (see `client.lua`).

local client = require('baton.client')

local M = {}

---@class baton.AskOpts
---@field question? string what to ask; nil: ask for it
---@field line1? integer first line of the range (1-based); nil: the whole file
---@field line2? integer last line of the range (1-based, inclusive)
---@field buf? integer default: the current buffer

---@param buf integer
---@param args table
---@return string
local function where(buf, args)
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':t')
  if args.range then
    local a = args.range.start.line + 1
    local b = require('baton.delegate').last_line(args.range) + 1
    return a == b and string.format('%s:%d', name, a) or string.format('%s:%d-%d', name, a, b)
  end
  return name
end

---@param c vim.lsp.Client
---@param args table
---@param buf integer
local function send(c, args, buf)
  client.command(c, 'baton.ask', args, function(result)
    if type(result) ~= 'table' or type(result.taskId) ~= 'string' then
      return
    end
    vim.notify(
      string.format('Baton: asked (%s); the answer opens when it comes', result.taskId),
      vim.log.levels.INFO,
      { title = 'Baton' }
    )
  end, buf)
end

---Ask for the question unless `args` has one, then send it.
---@param c vim.lsp.Client
---@param args table
---@param buf integer
local function ask_then_send(c, args, buf)
  if args.question and vim.trim(args.question) ~= '' then
    send(c, args, buf)
    return
  end
  vim.ui.input({ prompt = string.format('Baton: ask about %s: ', where(buf, args)) }, function(text)
    if text and vim.trim(text) ~= '' then
      args.question = text
      send(c, args, buf)
    end
  end)
end

---Ask about a range of a buffer (or the whole file).
---@param opts? baton.AskOpts
function M.ask(opts)
  opts = opts or {}
  local buf = opts.buf and opts.buf ~= 0 and opts.buf or vim.api.nvim_get_current_buf()
  local c = client.get(buf)
  if not c then
    return
  end
  local args = { uri = vim.uri_from_bufnr(buf), question = opts.question } ---@type table
  if opts.line1 then
    local line2 = opts.line2 or opts.line1
    args.range = {
      start = { line = opts.line1 - 1, character = 0 },
      ['end'] = { line = line2 - 1, character = #(vim.fn.getline(line2) or '') },
    }
  end
  ask_then_send(c, args, buf)
end

---The code action's `baton.ask` command: ask for the question when it has none.
---@param client_id integer
---@param args table the command's argument
---@param buf? integer
function M.from_action(client_id, args, buf)
  local c = vim.lsp.get_client_by_id(client_id)
  if not c then
    return
  end
  buf = buf and buf ~= 0 and buf or vim.uri_to_bufnr(args.uri)
  ask_then_send(c, vim.deepcopy(args), buf)
end

return M
