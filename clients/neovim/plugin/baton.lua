-- The :Baton command and the <Plug> maps; everything else loads on first use (:h baton).
if vim.g.loaded_baton then
  return
end
vim.g.loaded_baton = true

vim.api.nvim_create_user_command('Baton', function(args)
  require('baton.command').run(args)
end, {
  nargs = '*',
  range = true,
  desc = 'Baton: delegate to a coding agent and review its diff',
  complete = function(lead, line)
    return require('baton.command').complete(lead, line)
  end,
})

for name, fn in pairs({
  ['baton-delegate'] = 'delegate_selection',
  ['baton-fix'] = 'fix',
  ['baton-accept'] = 'accept',
  ['baton-reject'] = 'reject',
  ['baton-accept-all'] = 'accept_all',
  ['baton-reject-all'] = 'reject_all',
  ['baton-next'] = 'next_hunk',
  ['baton-prev'] = 'prev_hunk',
  ['baton-tasks'] = 'tasks',
  ['baton-reply'] = 'reply',
  ['baton-cancel'] = 'cancel',
  ['baton-inspect'] = 'inspect',
  ['baton-explain'] = 'explain',
  ['baton-preview'] = 'preview_hunk',
  ['baton-qflist'] = 'setqflist',
  ['baton-loclist'] = 'setloclist',
  ['baton-hunk'] = 'select_hunk',
}) do
  local visual = fn == 'delegate_selection'
    or fn == 'fix'
    or fn == 'explain'
    or fn == 'accept'
    or fn == 'reject'
  local modes = visual and { 'n', 'x' } or 'n'
  if fn == 'select_hunk' then
    modes = { 'o', 'x' }
  end
  vim.keymap.set(modes, '<Plug>(' .. name .. ')', function()
    require('baton')[fn]()
  end, { desc = 'Baton: ' .. fn:gsub('_', ' ') })
end
