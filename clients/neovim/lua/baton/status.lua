--- The task watcher: counts from `baton/status` for the statusline, and notifications when a
--- task from `baton/tasks` starts needing input, becomes ready for review or fails.

local config = require('baton.config')

local M = {}

---@class baton.Counts
---@field running integer
---@field needsInput integer
---@field review integer
---@field failed integer

---Counts per client (one client per workspace root).
---@type table<integer, baton.Counts>
M.by_client = {}

---The latest summary of each task seen, by task id.
---@type table<string, table>
M.tasks = {}

local redraw_pending = false

local function changed()
  pcall(vim.api.nvim_exec_autocmds, 'User', { pattern = 'BatonStatus', modeline = false })
  if redraw_pending then
    return
  end
  redraw_pending = true
  vim.schedule(function()
    redraw_pending = false
    pcall(vim.cmd.redrawstatus, { bang = true })
  end)
end

---@return baton.Counts
function M.counts()
  local out = { running = 0, needsInput = 0, review = 0, failed = 0 }
  for _, counts in pairs(M.by_client) do
    for key in pairs(out) do
      out[key] = out[key] + (tonumber(counts[key]) or 0)
    end
  end
  return out
end

---The statusline component: e.g. "Baton ▶1 ✓2"; empty when there is nothing to show.
---@return string
function M.text()
  local counts = M.counts()
  local icons = config.current.status_icons
  local parts = {}
  for _, item in ipairs({
    { counts.running, icons.running },
    { counts.needsInput, icons.needs_input },
    { counts.review, icons.review },
    { counts.failed, icons.failed },
  }) do
    if item[1] > 0 then
      table.insert(parts, item[2] .. item[1])
    end
  end
  if #parts == 0 then
    return ''
  end
  return 'Baton ' .. table.concat(parts, ' ')
end

---`baton/status`
---@param client_id integer
---@param counts baton.Counts
function M.on_status(client_id, counts)
  M.by_client[client_id] = counts
  changed()
end

local NOTIFIED = {
  needs_input = vim.log.levels.WARN,
  review = vim.log.levels.INFO,
  failed = vim.log.levels.ERROR,
}

---@param task table
---@return string
local function describe(task)
  local title = task.title or task.id
  if task.state == 'needs_input' then
    return string.format('Baton: %s needs input: %s (:Baton reply)', title, task.message or '')
  elseif task.state == 'review' then
    return string.format('Baton: %s is ready for review', title)
  end
  return string.format('Baton: %s failed: %s', title, task.message or '')
end

---`baton/tasks`
---@param client_id integer
---@param params { tasks: table[] }
function M.on_tasks(client_id, params)
  for _, task in ipairs(params.tasks or {}) do
    local before = M.tasks[task.id]
    task.client_id = client_id
    M.tasks[task.id] = task
    local level = NOTIFIED[task.state]
    if level and config.current.notify and (before == nil or before.state ~= task.state) then
      vim.notify(describe(task), level, { title = 'Baton' })
    end
    if task.state ~= 'review' and task.state ~= (before and before.state) then
      require('baton.diff').on_task_state(task.id, task.state)
    end
  end
  changed()
end

---@param client_id integer
function M.forget_client(client_id)
  M.by_client[client_id] = nil
  changed()
end

return M
