--- Planning: `:Baton plan {goal}` asks a worker to propose a task graph (the server's
--- `baton.plan`); when the planner stops, its proposal (`baton/plan`) opens in a floating
--- window listing every node — its worker, what it comes after, where it may write, its whole
--- instruction — problems first. In the float `a` approves (refused while the plan has
--- problems: `baton.planApprove` runs it as a graph, its tasks come as any tasks do), `r`
--- rejects (`baton.planReject`), `q` hides it (`:Baton plan_show` shows it again). A question
--- the planner asks comes as any task's question does (`:Baton reply`); it then plans again.

local client = require('baton.client')

local M = {}

---@class baton.PlanNode
---@field key string
---@field title string
---@field instruction string
---@field worker string|nil
---@field after string[]
---@field scope string[]|nil nil: anywhere
---@field kind string|nil

---@class baton.Plan
---@field taskId string
---@field goal string
---@field nodes baton.PlanNode[]
---@field problems string[]
---@field client_id integer

---Proposals waiting for a decision, by planner task id.
---@type table<string, baton.Plan>
M.proposals = {}

---The float: its window, buffer and the planner it shows.
---@type { win: integer|nil, buf: integer|nil, taskId: string|nil }
M.shown = { win = nil, buf = nil, taskId = nil }

M.ns = vim.api.nvim_create_namespace('baton_plan')

---@param value any
---@return string
local function str(value)
  if type(value) ~= 'string' then
    return ''
  end
  return value
end

---@param value any
---@return string[]
local function strings(value)
  local out = {}
  for _, v in ipairs(type(value) == 'table' and value or {}) do
    if type(v) == 'string' then
      table.insert(out, v)
    end
  end
  return out
end

---@param raw table
---@return baton.PlanNode
local function read_node(raw)
  return {
    key = str(raw.key),
    title = str(raw.title) ~= '' and str(raw.title) or str(raw.instruction),
    instruction = str(raw.instruction),
    worker = str(raw.worker) ~= '' and raw.worker or nil,
    after = strings(raw.after),
    scope = type(raw.scope) == 'table' and strings(raw.scope) or nil,
    kind = str(raw.kind) ~= '' and raw.kind or nil,
  }
end

---Whether the plan can be approved: it has nodes and no problem.
---@param plan baton.Plan
---@return boolean
function M.approvable(plan)
  return #plan.nodes > 0 and #plan.problems == 0
end

---The nodes in an order they can run in (each after what it comes after), then any left.
---@param nodes baton.PlanNode[]
---@return baton.PlanNode[]
function M.ordered(nodes)
  local keys, placed, out = {}, {}, {}
  for _, n in ipairs(nodes) do
    keys[n.key] = true
  end
  local left = vim.list_slice(nodes, 1, #nodes)
  while #left > 0 do
    local ready, rest = {}, {}
    for _, n in ipairs(left) do
      local ok = true
      for _, k in ipairs(n.after) do
        if keys[k] and not placed[k] then
          ok = false
        end
      end
      table.insert(ok and ready or rest, n)
    end
    if #ready == 0 then
      break
    end
    for _, n in ipairs(ready) do
      table.insert(out, n)
      placed[n.key] = true
    end
    left = rest
  end
  return vim.list_extend(out, left)
end

---The float's lines: the goal, the problems, each node, the keys.
---@param plan baton.Plan
---@return string[]
function M.lines(plan)
  local n = #plan.nodes
  local out = { 'Plan: ' .. plan.goal, '' }
  if #plan.problems > 0 then
    table.insert(out, string.format('This plan cannot run (%d problem(s)):', #plan.problems))
    for _, p in ipairs(plan.problems) do
      table.insert(out, '  ! ' .. p)
    end
    table.insert(out, '')
  else
    table.insert(out, string.format('%d task(s), checked.', n))
    table.insert(out, '')
  end
  for _, node in ipairs(M.ordered(plan.nodes)) do
    table.insert(out, string.format('%s: %s', node.key, node.title))
    local worker = node.worker or "the project's default"
    if node.kind then
      worker = worker .. ' (' .. node.kind .. ')'
    end
    table.insert(out, '  worker: ' .. worker)
    local after = #node.after > 0 and table.concat(node.after, ', ') or 'nothing (starts at once)'
    table.insert(out, '  after:  ' .. after)
    table.insert(out, '  scope:  ' .. (node.scope and table.concat(node.scope, ', ') or 'anywhere'))
    for _, line in ipairs(vim.split(vim.trim(node.instruction), '\n', { plain = true })) do
      table.insert(out, '  > ' .. line)
    end
    table.insert(out, '')
  end
  if M.approvable(plan) then
    table.insert(out, 'a approve (run it)   r reject   q hide')
  else
    table.insert(out, 'r reject   q hide   (it cannot be approved)')
  end
  return out
end

local function close()
  if M.shown.win and vim.api.nvim_win_is_valid(M.shown.win) then
    vim.api.nvim_win_close(M.shown.win, true)
  end
  M.shown = { win = nil, buf = nil, taskId = nil }
end

---Hide the float; the proposal stays (`:Baton plan_show`).
function M.hide()
  close()
end

---@param buf integer
---@param task_id string
local function keys(buf, task_id)
  local function map(lhs, fn, desc)
    vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, desc = desc })
  end
  map('a', function()
    M.approve(task_id)
  end, 'Baton: approve the plan (run it)')
  map('r', function()
    M.reject(task_id)
  end, 'Baton: reject the plan')
  map('q', M.hide, 'Baton: hide the plan')
end

---Show a proposal in the float (and focus it: the user reads it, then decides).
---@param task_id string
function M.show(task_id)
  local plan = M.proposals[task_id]
  if not plan then
    return
  end
  close()
  local lines = M.lines(plan)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'wipe'
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = 'batonplan'
  keys(buf, task_id)
  vim.api.nvim_buf_set_extmark(buf, M.ns, 0, 0, { end_col = #lines[1], hl_group = 'Title' })
  for i, line in ipairs(lines) do
    local group = line:match('^  ! ') and 'ErrorMsg'
      or line:match('^[%w_-]+: ') and i > 2 and 'Identifier'
      or nil
    if group then
      vim.api.nvim_buf_set_extmark(buf, M.ns, i - 1, 0, { end_col = #line, hl_group = group })
    end
  end
  local width = 30
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  width = math.min(width, math.max(30, vim.o.columns - 6))
  local height = math.min(#lines, math.max(5, vim.o.lines - 6))
  local win = vim.api.nvim_open_win(buf, true, {
    relative = 'editor',
    row = math.max(0, math.floor((vim.o.lines - height) / 2) - 1),
    col = math.max(0, math.floor((vim.o.columns - width) / 2)),
    width = width,
    height = height,
    style = 'minimal',
    border = 'rounded',
    title = ' Baton plan ',
  })
  vim.wo[win].wrap = true
  M.shown = { win = win, buf = buf, taskId = task_id }
end

---The proposal waiting: the one named, else the newest shown or any.
---@param task_id string|nil
---@return baton.Plan|nil
local function find(task_id)
  if task_id then
    for id, plan in pairs(M.proposals) do
      if vim.startswith(id, task_id) then
        return plan
      end
    end
    return nil
  end
  return M.proposals[M.shown.taskId or ''] or select(2, next(M.proposals))
end

---The proposal waiting (as `find`), or nil once the user is told none is.
---@param task_id string|nil
---@param hint string|nil what to say after it, e.g. how to make one
---@return baton.Plan|nil
local function waiting(task_id, hint)
  local plan = find(task_id)
  if not plan then
    vim.notify('Baton: no plan is waiting' .. (hint or ''), vim.log.levels.INFO)
  end
  return plan
end

---`:Baton plan_show [id]`: show a waiting proposal again.
---@param task_id string|nil
function M.show_waiting(task_id)
  local plan = waiting(task_id, ' (:Baton plan {goal})')
  if not plan then
    return
  end
  M.show(plan.taskId)
end

---@param plan baton.Plan
---@return vim.lsp.Client|nil
local function client_of(plan)
  local c = vim.lsp.get_client_by_id(plan.client_id)
  if not c then
    vim.notify('Baton: the server that planned it is gone', vim.log.levels.WARN)
  end
  return c
end

---Approve a proposal: it runs as a graph (refused while it has problems).
---@param task_id string|nil
function M.approve(task_id)
  local plan = waiting(task_id)
  if not plan then
    return
  end
  if not M.approvable(plan) then
    local why = #plan.problems > 0 and table.concat(plan.problems, '; ') or 'it has no tasks'
    vim.notify('Baton: this plan cannot run: ' .. why, vim.log.levels.ERROR)
    return
  end
  local c = client_of(plan)
  if not c then
    return
  end
  client.command(c, 'baton.planApprove', { taskId = plan.taskId }, function(result)
    M.proposals[plan.taskId] = nil
    if M.shown.taskId == plan.taskId then
      close()
    end
    local tasks = type(result) == 'table' and type(result.tasks) == 'table' and result.tasks or {}
    M.last_approved = tasks
    vim.notify(
      string.format('Baton: the plan runs: %d task(s) started (:Baton tasks)', vim.tbl_count(tasks)),
      vim.log.levels.INFO
    )
  end)
end

---Reject a proposal: nothing of it runs.
---@param task_id string|nil
function M.reject(task_id)
  local plan = waiting(task_id)
  if not plan then
    return
  end
  local c = client_of(plan)
  if not c then
    return
  end
  client.command(c, 'baton.planReject', { taskId = plan.taskId }, function()
    M.proposals[plan.taskId] = nil
    if M.shown.taskId == plan.taskId then
      close()
    end
    vim.notify('Baton: plan rejected; nothing of it runs', vim.log.levels.INFO)
  end)
end

---`baton/plan`: a planner stopped.
---@param client_id integer
---@param params table
function M.on_plan(client_id, params)
  local task_id = str(params.taskId)
  if task_id == '' then
    return
  end
  local goal = str(params.goal)
  if params.state == 'asks' then
    return -- the question comes as the planner task's (`:Baton reply`); it plans again
  end
  if params.state == 'failed' then
    M.proposals[task_id] = nil
    vim.notify(
      string.format('Baton: the planner of %q ended without a plan: %s', goal, str(params.message)),
      vim.log.levels.ERROR
    )
    return
  end
  local nodes = {}
  for _, raw in ipairs(type(params.nodes) == 'table' and params.nodes or {}) do
    if type(raw) == 'table' then
      table.insert(nodes, read_node(raw))
    end
  end
  M.proposals[task_id] = {
    taskId = task_id,
    goal = goal,
    nodes = nodes,
    problems = strings(params.problems),
    client_id = client_id,
  }
  M.show(task_id)
end

---@param c vim.lsp.Client
---@param goal string
---@param worker string|nil
local function send(c, goal, worker)
  local args = { goal = goal, worker = worker } ---@type table
  if c.config.root_dir then
    args.uri = vim.uri_from_fname(c.config.root_dir)
  end
  client.command(c, 'baton.plan', args, function(result)
    if type(result) ~= 'table' or type(result.taskId) ~= 'string' then
      return
    end
    vim.notify(
      string.format('Baton: planning (%s); the plan opens when it comes', result.taskId),
      vim.log.levels.INFO
    )
  end)
end

---`:Baton plan [worker=W] {goal}`: ask a worker to propose a task graph for the goal
---(asked for when not given).
---@param goal string|nil
---@param worker string|nil the planner (default: the project's routing for `reasoning`)
function M.plan(goal, worker)
  local c = vim.lsp.get_clients({ name = client.name, bufnr = 0 })[1]
    or client.all()[1]
    or client.get(0)
  if not c then
    vim.notify(
      'Baton: no Baton server is running (open a file in a workspace)',
      vim.log.levels.WARN
    )
    return
  end
  if goal and vim.trim(goal) ~= '' then
    send(c, goal, worker)
    return
  end
  vim.ui.input({ prompt = 'Baton: plan which goal? ' }, function(text)
    if text and vim.trim(text) ~= '' then
      send(c, text, worker)
    end
  end)
end

---The server stopped: its proposals are gone.
---@param client_id integer
function M.forget_client(client_id)
  for id, plan in pairs(M.proposals) do
    if plan.client_id == client_id then
      M.proposals[id] = nil
      if M.shown.taskId == id then
        close()
      end
    end
  end
end

return M
