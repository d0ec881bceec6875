--- `:Baton {subcommand}`: the user command, its argument parsing and its completion.

local M = {}

---@class baton.CommandArgs
---@field fargs string[]
---@field range integer 0: no range given
---@field line1 integer
---@field line2 integer

---Split "key=value" options (kind, worker, model) from the words of an instruction.
---@param words string[]
---@return table options
---@return string|nil instruction
function M.parse(words)
  local opts = {}
  local rest = {}
  for _, word in ipairs(words) do
    local k, v = word:match('^(%w+)=(.+)$')
    if #rest == 0 and (k == 'kind' or k == 'worker' or k == 'model') then
      opts[k] = v
    else
      table.insert(rest, word)
    end
  end
  return opts, #rest > 0 and table.concat(rest, ' ') or nil
end

---@param a baton.CommandArgs
---@param kind baton.Kind
---@param words string[]
local function delegate(a, kind, words)
  local opts, instruction = M.parse(words)
  opts.kind = opts.kind or kind
  opts.instruction = instruction
  if a.range > 0 then
    opts.line1, opts.line2 = a.line1, a.line2
  elseif opts.kind == 'fix' then
    local line = vim.api.nvim_win_get_cursor(0)[1]
    opts.line1, opts.line2 = line, line
  end
  require('baton.delegate').delegate(opts)
end

---@type table<string, fun(a: baton.CommandArgs, words: string[])>
M.subcommands = {
  delegate = function(a, words)
    delegate(a, 'delegate', words)
  end,
  fix = function(a, words)
    delegate(a, 'fix', words)
  end,
  explain = function(a, words)
    delegate(a, 'explain', words)
  end,
  tests = function(a, words)
    delegate(a, 'tests', words)
  end,
  ask = function(a, words)
    local opts = { question = #words > 0 and table.concat(words, ' ') or nil }
    if a.range > 0 then
      opts.line1, opts.line2 = a.line1, a.line2
    end
    require('baton.ask').ask(opts)
  end,
  plan = function(_, words)
    local opts, goal = M.parse(words)
    require('baton.plan').plan(goal, opts.worker)
  end,
  plan_show = function(_, words)
    require('baton.plan').show_waiting(words[1])
  end,
  accept = function(a)
    require('baton.diff').accept(a.range > 0 and { a.line1, a.line2 } or nil)
  end,
  reject = function(a)
    require('baton.diff').reject(a.range > 0 and { a.line1, a.line2 } or nil)
  end,
  comment = function(a, words)
    local text = #words > 0 and table.concat(words, ' ') or nil
    require('baton.comment').comment(a.range > 0 and { a.line1, a.line2 } or nil, text)
  end,
  reject_why = function(_, words)
    require('baton.comment').reject_why(#words > 0 and table.concat(words, ' ') or nil)
  end,
  step_back = function(_, words)
    require('baton.comment').step_back(tonumber(words[1]))
  end,
  resolve = function(_, words)
    require('baton.resolve').command(words[1])
  end,
  preview = function()
    require('baton.hunks').preview()
  end,
  qflist = function()
    require('baton.hunks').setqflist()
  end,
  loclist = function()
    require('baton.hunks').setloclist()
  end,
  accept_all = function()
    require('baton.diff').accept_all()
  end,
  reject_all = function()
    require('baton.diff').reject_all()
  end,
  next = function(_, words)
    require('baton.diff').next(tonumber(words[1]) or 1)
  end,
  prev = function(_, words)
    require('baton.diff').prev(tonumber(words[1]) or 1)
  end,
  tasks = function()
    require('baton.tasks').open()
  end,
  reply = function(_, words)
    local id = table.remove(words, 1)
    require('baton.tasks').reply(id, #words > 0 and table.concat(words, ' ') or nil)
  end,
  cancel = function(_, words)
    require('baton.tasks').cancel(words[1])
  end,
  retry = function(_, words)
    require('baton.tasks').retry(words[1])
  end,
  handoff = function(_, words)
    local worker = nil
    local rest = {}
    for _, w in ipairs(words) do
      local named = w:match('^worker=(.+)$')
      if named then
        worker = named
      else
        table.insert(rest, w)
      end
    end
    require('baton.tasks').handoff(rest[1], worker)
  end,
  archive = function(_, words)
    local undo = words[1] == 'undo'
    if undo then
      table.remove(words, 1)
    end
    require('baton.tasks').archive(words[1], undo)
  end,
  permission = function(_, words)
    require('baton.permission').prompt(words[1])
  end,
  inspect = function(_, words)
    require('baton.tasks').inspect(words[1])
  end,
  attach = function()
    require('baton.client').attach(0)
  end,
  dashboard = function()
    require('baton.dashboard').open()
  end,
  status = function()
    local text = require('baton.status').text()
    vim.notify(
      text ~= '' and text or 'Baton: no task running, waiting or ready',
      vim.log.levels.INFO
    )
  end,
}

---@param a baton.CommandArgs
function M.run(a)
  local words = vim.list_slice(a.fargs, 1, #a.fargs)
  local name = table.remove(words, 1) or 'tasks'
  local sub = M.subcommands[name]
  if not sub then
    vim.notify(
      'Baton: unknown subcommand ' .. name .. ' (see :h baton-commands)',
      vim.log.levels.ERROR
    )
    return
  end
  sub(a, words)
end

---@param lead string
---@param line string
---@return string[]
function M.complete(lead, line)
  local words = vim.split(line, '%s+', { trimempty = true })
  local first = 2 -- words[1] is the command itself, with its range
  local typing = #words < first or (#words == first and lead ~= '')
  if typing then
    local names = vim.tbl_keys(M.subcommands)
    table.sort(names)
    return vim.tbl_filter(function(n)
      return vim.startswith(n, lead)
    end, names)
  end
  local sub = words[first]
  if sub == 'resolve' then
    return vim.tbl_filter(function(n)
      return vim.startswith(n, lead)
    end, { 'mine', 'theirs', 'merge', 'redo' })
  end
  local complete = require('baton.complete')
  if complete.STATES[sub] ~= nil then
    if #words > first + (lead == '' and 0 or 1) then
      return {} -- the id is given already (what follows is the reply's text)
    end
    return complete.matching(complete.task_ids(sub), lead)
  end
  if sub == 'delegate' or sub == 'fix' or sub == 'explain' or sub == 'tests' then
    if lead:match('^worker=') or lead:match('^model=') then
      return complete.options(lead, vim.list_slice(words, first + 1))
    end
    local out = {}
    for _, k in ipairs({
      'kind=delegate',
      'kind=fix',
      'kind=explain',
      'kind=tests',
      'worker=',
      'model=',
    }) do
      if vim.startswith(k, lead) then
        table.insert(out, k)
      end
    end
    return out
  end
  return {}
end

return M
