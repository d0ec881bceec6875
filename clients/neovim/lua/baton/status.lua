--- The task watcher: counts from `baton/status` for the statusline (and a warning there when
--- agents run unsandboxed or are refused: its `sandbox`), and notifications when a
--- task from `baton/tasks` starts needing input, becomes ready for review or fails. A task
--- another tool proposed (`proposedBy`, e.g. Claude Code in a terminal) is named as its
--- proposal, and once it is applied the proposer writes the file: `baton.reload` shows it.

local config = require('baton.config')

local M = {}

---@class baton.Sandbox
---@field agents 'sandboxed'|'unsandboxed'|'refused'
---@field summary string|nil
---@field advice string|nil

---@class baton.Counts
---@field running integer
---@field needsInput integer
---@field review integer
---@field failed integer
---@field sandbox baton.Sandbox|nil how agents run (`baton/status`), nil from an older server

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

---How agents run, from the servers' `baton/status`: the worst any server says ('refused',
---'unsandboxed', 'sandboxed'), nil when none said.
---@return 'sandboxed'|'unsandboxed'|'refused'|nil
function M.sandbox()
  local rank = { sandboxed = 1, unsandboxed = 2, refused = 3 }
  local worst = nil
  for _, counts in pairs(M.by_client) do
    local agents = type(counts.sandbox) == 'table' and counts.sandbox.agents or nil
    if rank[agents] and (worst == nil or rank[agents] > rank[worst]) then
      worst = agents
    end
  end
  return worst
end

---The statusline component: e.g. "Baton ▶1 ✓2", "Baton ⚠unsandboxed ▶1" when agents run
---outside the sandbox; empty when there is nothing to show.
---@return string
function M.text()
  local counts = M.counts()
  local icons = config.current.status_icons
  local parts = {}
  local sandbox = M.sandbox()
  if sandbox == 'unsandboxed' or sandbox == 'refused' then
    table.insert(parts, (icons.unsandboxed or '⚠') .. sandbox)
  end
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

---Display names of the tools whose proposals arrive as tasks (`proposedBy`).
local PROPOSERS = { ['claude-code'] = 'Claude Code' }

---Who proposed this task (e.g. "Claude Code"), or nil for Baton's own tasks.
---@param task table a task summary
---@return string|nil
function M.proposer(task)
  local by = task.proposedBy
  if type(by) ~= 'string' or by == '' then
    return nil
  end
  return PROPOSERS[by] or by
end

---A task's title as the user should read it: "Claude Code proposes: edit app.py" for a
---proposal (its title is "Claude Code: edit app.py"), else the title itself.
---@param task table a task summary
---@return string
function M.title(task)
  local title = task.title
  if type(title) ~= 'string' or title == '' then
    title = task.id or '?'
  end
  local by = M.proposer(task)
  if not by then
    return title
  end
  local prefix = by .. ': '
  if title:sub(1, #prefix) == prefix then
    title = title:sub(#prefix + 1)
  end
  return by .. ' proposes: ' .. title
end

--- States in which a task still has a diff to show (see baton.diff).
local SHOWN_DIFF = {
  preparing = true,
  running = true,
  verifying = true,
  needs_input = true,
  review = true,
}

local NOTIFIED = {
  needs_input = vim.log.levels.WARN,
  review = vim.log.levels.INFO,
  failed = vim.log.levels.ERROR,
}

---@param task table
---@return string
local function describe(task)
  local title = M.title(task)
  local by = M.proposer(task)
  if by and task.state == 'review' then
    return string.format(
      'Baton: %s (decide its hunks inline; %s writes what you accept)',
      title,
      by
    )
  end
  local waiting = require('baton.permission').list(task.id)[1]
  if task.state == 'needs_input' and waiting then
    return string.format(
      'Baton: %s waits for permission: %s (:Baton permission)',
      title,
      waiting.tool
    )
  elseif task.state == 'needs_input' then
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
      local text = require('baton.message').line(describe(task), ':Baton inspect ' .. task.id)
      vim.notify(text, level, { title = 'Baton' })
    end
    if task.state ~= 'review' and task.state ~= (before and before.state) then
      local diff = require('baton.diff')
      diff.on_task_state(task.id, task.state)
      if not SHOWN_DIFF[task.state] then
        local files = diff.take_files(task.id)
        if task.state == 'applied' and M.proposer(task) then
          -- the proposer writes the file now (Baton wrote nothing): show what it writes
          require('baton.reload').watch(task, files)
        end
      end
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
