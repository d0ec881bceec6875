--- Completion for `:Baton`: task ids (from the server's `baton.tasks`) after the task moves,
--- and profile names after `worker=` (from the server's `baton.workers`, the same resolved
--- settings routing and `baton workers` read; cached per root and refreshed in the background
--- at each completion, so a profile added to the config shows at the next <Tab>).

local client = require('baton.client')

local M = {}

--- The states whose tasks each move can take (nil: every task).
---@type table<string, string[]|false>
M.STATES = {
  inspect = false,
  reply = { 'needs_input', 'review' },
  cancel = { 'queued', 'preparing', 'running', 'verifying', 'rate_limited', 'needs_input' },
  retry = { 'failed', 'cancelled', 'interrupted', 'answered' },
  handoff = { 'failed', 'cancelled', 'interrupted', 'rate_limited' },
  archive = { 'applied', 'rejected', 'answered', 'failed', 'cancelled', 'interrupted' },
  permission = { 'needs_input' },
}

---@class baton.WorkerInfo
---@field name string
---@field provider string
---@field models? string[]
---@field model? string
---@field enabled boolean
---@field allowed? boolean
---@field can_run? boolean
---@field problem? string

---Workers per root: the last answer, and whether a request for a newer one is out.
---@type table<string, { workers: baton.WorkerInfo[]|nil, running: true|nil }>
local by_root = {}

---@param items string[]
---@param lead string
---@return string[]
local function matching(items, lead)
  return vim.tbl_filter(function(item)
    return vim.startswith(item, lead)
  end, items)
end

---The Baton client of the current buffer, or any running one (never starts one).
---@return vim.lsp.Client|nil
local function current_client()
  return vim.lsp.get_clients({ name = client.name, bufnr = 0 })[1] or client.all()[1]
end

---Task ids the server knows, newest first, those a move can take.
---@param move string
---@param timeout_ms? integer default 1000
---@return string[]
function M.task_ids(move, timeout_ms)
  local c = current_client()
  if not c or not c.initialized then
    return {}
  end
  local states = M.STATES[move] or nil
  local params = {
    command = 'baton.tasks',
    arguments = { { limit = 100, states = states } },
  }
  local ok, answer
  if vim.fn.has('nvim-0.11') == 1 then
    ok, answer = pcall(c.request_sync, c, 'workspace/executeCommand', params, timeout_ms or 1000)
  else
    ok, answer = pcall(c.request_sync, 'workspace/executeCommand', params, timeout_ms or 1000)
  end
  local tasks = ok and answer and answer.result and answer.result.tasks or {}
  local out = {}
  for _, t in ipairs(tasks) do
    if type(t.id) == 'string' then
      table.insert(out, t.id)
    end
  end
  return out
end

---Ask the server for the workers of `root` (`baton.workers`: the websocket's `workers`
---answer, the same resolved settings routing reads) and keep its answer.
---@param c vim.lsp.Client
---@param root string
---@return table entry
local function refresh(c, root)
  local entry = by_root[root] or {}
  by_root[root] = entry
  if entry.running then
    return entry
  end
  local name = vim.api.nvim_buf_get_name(0)
  local args = name ~= '' and { uri = vim.uri_from_fname(name) } or {}
  entry.running = true
  local params = { command = 'baton.workers', arguments = { args } }
  local ok = pcall(client.request, c, 'workspace/executeCommand', params, function(err, result)
    entry.running = nil
    if not err and type(result) == 'table' and type(result.workers) == 'table' then
      entry.workers = result.workers
    end
  end, 0)
  if not ok then
    entry.running = nil
  end
  return entry
end

---The workers of the current buffer's root (waiting up to `timeout_ms` the first time).
---@param timeout_ms? integer default 3000
---@return baton.WorkerInfo[]
function M.workers(timeout_ms)
  local c = current_client()
  ---@diagnostic disable-next-line: need-check-nil (the `c and` guards it)
  local root = c and c.root_dir
  if not c or not root then
    return {} -- no server: a <Tab> must not start a broker
  end
  local entry = refresh(c, root)
  if not entry.workers and entry.running then
    vim.wait(timeout_ms or 3000, function()
      return entry.running == nil
    end, 20)
  end
  return entry.workers or {}
end

---`worker=NAME` for every usable profile, and `model=NAME` for the models of the chosen
---worker (or of all), matching what is typed.
---@param lead string e.g. "worker=cl"
---@param words string[] the words typed before
---@return string[]
function M.options(lead, words)
  local key = lead:match('^(%w+)=')
  if key ~= 'worker' and key ~= 'model' then
    return {}
  end
  local workers = M.workers()
  local chosen
  for _, w in ipairs(words) do
    chosen = w:match('^worker=(.+)$') or chosen
  end
  local out, seen = {}, {}
  for _, w in ipairs(workers) do
    if key == 'worker' and w.enabled ~= false and w.allowed ~= false then
      table.insert(out, 'worker=' .. w.name)
    elseif key == 'model' and (chosen == nil or chosen == w.name) then
      local models = vim.list_extend({ w.model }, w.models or {})
      for _, m in ipairs(models) do
        if type(m) == 'string' and not seen[m] then
          seen[m] = true
          table.insert(out, 'model=' .. m)
        end
      end
    end
  end
  table.sort(out)
  return matching(out, lead)
end

---Forget the cached workers (all roots).
function M.reset()
  by_root = {}
end

M.matching = matching

return M
