--- `:Baton tasks` and the task moves: pick a task with `vim.ui.select`, then open its diff,
--- reply, cancel, retry, accept or reject it all, or inspect it. Windows open only when the
--- user asks for something to look at (a file, a transcript). What a task offers comes from
--- its `next` moves (a proposal, e.g. Claude Code's, has no reply or retry).

local client = require('baton.client')

local M = {}

---@param c vim.lsp.Client|nil
---@return vim.lsp.Client|nil
local function any_client(c)
  c = c or client.get(0)
  if not c then
    c = client.all()[1]
  end
  if not c then
    vim.notify(
      'Baton: no Baton server is running (open a file in a workspace)',
      vim.log.levels.WARN
    )
  end
  return c
end

---@param n number
---@return string
local function tokens_text(n)
  if n >= 1000000 then
    return string.format('%.1fM', n / 1000000)
  end
  return n >= 1000 and string.format('%.1fk', n / 1000) or tostring(n)
end

---What the task used: `1.6k tokens · ~$0.0040` (`~`: an estimate from a price table, not the
---CLI's own cost); '' before its agent reported any.
---@param usage table|nil the server's usage (`input`, `cached`, `output`, `cost`, `cost_source`)
---@return string
function M.spent(usage)
  if not usage or type(usage) ~= 'table' then
    return ''
  end
  local function n(key)
    local v = usage[key]
    return type(v) == 'number' and v > 0 and v or 0
  end
  local total = n('input') + n('cached') + n('output')
  local cost = type(usage.cost) == 'number' and usage.cost or nil
  if total == 0 and not cost then
    return ''
  end
  local text = tokens_text(total) .. ' tokens'
  if cost then
    local mark = usage.cost_source == 'estimated' and '~' or ''
    text = text .. string.format(' · %s$%.4f', mark, cost)
  end
  return text
end

---@param task table
---@return string
function M.format(task)
  local message = task.message
      and task.message ~= vim.NIL
      and task.message ~= ''
      and ('  ' .. task.message)
    or ''
  local waiting = require('baton.permission').list(task.id)[1]
  if waiting then
    message = '  waits for permission: ' .. waiting.tool .. ' (:Baton permission)'
  end
  local title = require('baton.status').title(task)
  local spent = M.spent(task.usage)
  spent = spent ~= '' and ('  ' .. spent) or ''
  return string.format('[%s] %s (%s)%s%s', task.state, title, task.id, spent, message)
end

---Does the task offer this move (its `next`)?
---@param task table
---@param move string
---@return boolean
local function offers(task, move)
  return type(task.next) ~= 'table' or vim.tbl_contains(task.next, move)
end

---Pick a task (newest first).
---Only tasks in `filter.states` (all: nil) that offer the move `filter.move` (any: nil).
---@param filter { states?: string[], move?: string }|nil
---@param on_choice fun(task: table, c: vim.lsp.Client)
function M.pick(filter, on_choice)
  local c = any_client(nil)
  if not c then
    return
  end
  ---@diagnostic disable-next-line: need-check-nil (the `filter and` guards it)
  local args = { limit = 100, states = filter and filter.states or nil }
  client.command(c, 'baton.tasks', args, function(result)
    local tasks = result and result.tasks or {}
    ---@diagnostic disable-next-line: need-check-nil (the `filter and` guards it)
    local move = filter and filter.move
    if move then
      tasks = vim.tbl_filter(function(t)
        return offers(t, move)
      end, tasks)
    end
    if #tasks == 0 then
      vim.notify('Baton: no tasks', vim.log.levels.INFO)
      return
    end
    vim.ui.select(tasks, { prompt = 'Baton tasks', format_item = M.format }, function(task)
      if task then
        on_choice(task, c)
      end
    end)
  end)
end

---Find a task by id, or pick one in the given states (that offers the move).
---@param id string|nil
---@param states string[]|nil
---@param fn fun(task_id: string, c: vim.lsp.Client)
---@param move? string
local function with_task(id, states, fn, move)
  if id and id ~= '' then
    local c = any_client(nil)
    if c then
      fn(id, c)
    end
    return
  end
  M.pick({ states = states, move = move }, function(task, c)
    fn(task.id, c)
  end)
end

---@param id? string
---@param text? string
function M.reply(id, text)
  with_task(id, { 'needs_input', 'review' }, function(task_id, c)
    local function send(answer)
      client.command(c, 'baton.reply', { taskId = task_id, text = answer })
    end
    if text and text ~= '' then
      send(text)
    else
      vim.ui.input({ prompt = 'Baton: reply to ' .. task_id .. ': ' }, function(answer)
        if answer and vim.trim(answer) ~= '' then
          send(answer)
        end
      end)
    end
  end, 'reply')
end

---@param id? string
function M.cancel(id)
  with_task(
    id,
    { 'queued', 'preparing', 'running', 'verifying', 'rate_limited', 'needs_input' },
    function(task_id, c)
      client.command(c, 'baton.cancel', { taskId = task_id })
    end,
    'cancel'
  )
end

---@param id? string
function M.retry(id)
  with_task(id, { 'failed', 'cancelled', 'interrupted', 'answered' }, function(task_id, c)
    client.command(c, 'baton.retry', { taskId = task_id })
  end, 'retry')
end

---Hand a stopped task to another worker: the same task, its history kept.
---@param id? string
---@param worker? string a profile (nil: the next one the project's routing allows)
function M.handoff(id, worker)
  local states = require('baton.complete').STATES['handoff'] --[[@as string[] ]]
  with_task(id, states, function(task_id, c)
    client.command(c, 'baton.handoff', { taskId = task_id, worker = worker }, function(res)
      vim.notify(
        string.format('Baton: task %s handed to %s', task_id, res and res.worker or '?'),
        vim.log.levels.INFO
      )
    end)
  end)
end

---Hide a settled task from the task lists, its history kept (`undo`: list it again).
---@param id? string
---@param undo? boolean
function M.archive(id, undo)
  if undo and (not id or id == '') then
    vim.notify('Baton: archive undo takes the task id (see baton tasks --archived)')
    return
  end
  local states = require('baton.complete').STATES['archive'] --[[@as string[] ]]
  with_task(id, states, function(task_id, c)
    client.command(c, 'baton.archive', { taskId = task_id, undo = undo or nil }, function()
      vim.notify(
        string.format('Baton: task %s %s', task_id, undo and 'unarchived' or 'archived'),
        vim.log.levels.INFO
      )
    end)
  end)
end

---Show a task's live transcript in a scratch buffer in a split (the user asked to see it).
---@param id? string
function M.inspect(id)
  with_task(id, nil, function(task_id, c)
    require('baton.transcript').open(task_id, c)
  end)
end

---Open the first file of a task's diff in the current window (its hunks are then drawn).
---@param task_id string
---@param c vim.lsp.Client
function M.open_diff(task_id, c)
  client.command(c, 'baton.diff', { taskId = task_id }, function(payload)
    local file = payload.files and payload.files[1]
    if not file then
      vim.notify('Baton: this task changed no file', vim.log.levels.INFO)
      return
    end
    require('baton.diff').on_diff(c.id, payload, true)
    vim.cmd.edit(vim.fn.fnameescape(vim.uri_to_fname(file.uri)))
    local hunk = file.hunks and file.hunks[1]
    if hunk then
      pcall(vim.api.nvim_win_set_cursor, 0, { hunk.range.start.line + 1, 0 })
    end
  end)
end

---The moves offered for a task in the picker.
---@param task table
---@return { [1]: string, [2]: fun(task_id: string, c: vim.lsp.Client) }[]
local function moves(task)
  local next_moves = {}
  for _, m in ipairs(task.next or {}) do
    next_moves[m] = true
  end
  local out = {}
  if next_moves.diff or next_moves.watch then
    table.insert(out, { 'open diff', M.open_diff })
  end
  if next_moves.reply then
    table.insert(out, {
      'reply',
      function(id)
        M.reply(id)
      end,
    })
  end
  if next_moves.accept then
    table.insert(out, {
      'accept all',
      function(id, c)
        client.command(c, 'baton.accept', { taskId = id })
      end,
    })
  end
  if next_moves.reject then
    table.insert(out, {
      'reject all',
      function(id, c)
        client.command(c, 'baton.reject', { taskId = id })
      end,
    })
  end
  if next_moves.cancel then
    table.insert(out, {
      'cancel',
      function(id)
        M.cancel(id)
      end,
    })
  end
  if next_moves.retry then
    table.insert(out, {
      'retry',
      function(id)
        M.retry(id)
      end,
    })
  end
  table.insert(out, {
    'inspect',
    function(id)
      M.inspect(id)
    end,
  })
  return out
end

---`:Baton tasks`: pick a task, then what to do with it.
function M.open()
  M.pick(nil, function(task, c)
    local options = moves(task)
    vim.ui.select(options, {
      prompt = M.format(task),
      format_item = function(item)
        return item[1]
      end,
    }, function(choice)
      if choice then
        choice[2](task.id, c)
      end
    end)
  end)
end

return M
