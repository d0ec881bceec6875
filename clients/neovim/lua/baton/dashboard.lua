--- `:Baton dashboard`: the broker's dashboard page (every task live, tokens and cost per
--- worker) in the system's browser, from a one-time link the server hands out.

local client = require('baton.client')

local M = {}

---The server's `baton.dashboard` answer.
---@class baton.DashboardLink
---@field url string one-time URL of the page: it works once, within 120 s
---@field origin string `http://127.0.0.1:PORT`, the page's origin
---@field port integer
---@field expires number Unix time the URL stops working
---@field actions boolean whether the page may accept, reject and cancel

---Ask the server for a one-time link of its dashboard and open it with |vim.ui.open()|.
---@param c? vim.lsp.Client the Baton client (default: the current buffer's, else any)
---@param on_open? fun(link: baton.DashboardLink) called once the browser was asked
function M.open(c, on_open)
  c = c or client.get(0) or client.all()[1]
  if not c then
    vim.notify(
      'Baton: no Baton server is running (open a file in a workspace)',
      vim.log.levels.WARN
    )
    return
  end
  client.command(c, 'baton.dashboard', nil, function(link)
    if type(link) ~= 'table' or type(link.url) ~= 'string' then
      vim.notify('Baton: the server gave no dashboard link', vim.log.levels.ERROR)
      return
    end
    ---@cast link baton.DashboardLink
    local _, err = vim.ui.open(link.url)
    if err then
      vim.notify(
        string.format(
          'Baton: could not open the browser (%s); the link, good once: %s',
          err,
          link.url
        ),
        vim.log.levels.WARN
      )
    else
      vim.notify('Baton: dashboard opened in the browser', vim.log.levels.INFO)
    end
    if on_open then
      on_open(link)
    end
  end)
end

return M
