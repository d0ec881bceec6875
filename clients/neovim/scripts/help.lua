-- Renders the options section of doc/baton.txt (`:h baton-config`, from its heading to the
-- next rule) from the options of lua/baton/config.lua, and prints it, or with
-- `--write FILE` puts it in place in FILE. Run by the repository's scripts/gen-docs:
--   nvim --clean -l clients/neovim/scripts/help.lua [--write clients/neovim/doc/baton.txt]
local root = vim.fn.fnamemodify(arg[0], ':p:h:h')
package.path = root .. '/lua/?.lua;' .. root .. '/lua/?/init.lua;' .. package.path
local options = require('baton.config').options

local WIDTH = 78
local HEADING = '*baton-config*'

local INTRO = [[
`require('baton').setup(opts)` takes a table with any of these fields; the
values shown are the defaults. The type is `baton.Config` (LuaCATS) in
`lua/baton/config.lua`, where each option is written once, with its type,
default and the text below; a value of the wrong type is an error naming the
option. Calling `setup()` again changes the settings of the servers already
running.]]

---@param v any
---@return string
local function lua_value(v)
  if type(v) == 'string' then
    return "'" .. v:gsub('\\', '\\\\'):gsub("'", "\\'") .. "'"
  elseif type(v) == 'table' then
    local parts = {}
    for _, x in ipairs(v) do
      parts[#parts + 1] = lua_value(x)
    end
    return #parts == 0 and '{}' or '{ ' .. table.concat(parts, ', ') .. ' }'
  end
  return tostring(v)
end

---@param text string
---@param comment? string
---@return string
local function with_comment(text, comment)
  if not comment then
    return text
  end
  return text .. string.rep(' ', math.max(1, 33 - #text)) .. '-- ' .. comment
end

---@param tag string
---@return string
local function right(tag)
  return string.rep(' ', WIDTH - vim.fn.strdisplaywidth(tag)) .. tag
end

---@param lines string[]
---@param text string
---@param indent string
local function add_text(lines, text, indent)
  for line in (text .. '\n'):gmatch('(.-)\n') do
    if line == '' then
      lines[#lines + 1] = ''
    elseif line:sub(1, 1) == '<' then -- the end of an example: help wants it in column 1
      lines[#lines + 1] = '<' .. indent:sub(2) .. line:sub(2)
    else
      lines[#lines + 1] = indent .. line
    end
  end
end

---@return string[]
local function section()
  local lines = { '' }
  add_text(lines, INTRO, '')
  vim.list_extend(lines, { '>lua', "    require('baton').setup({" })
  for _, option in ipairs(options) do
    if option.fields then
      lines[#lines + 1] = '      ' .. option.name .. ' = {'
      for _, field in ipairs(option.fields) do
        lines[#lines + 1] = '        ' .. field.name .. ' = ' .. lua_value(field.default) .. ','
      end
      lines[#lines + 1] = '      },'
    else
      local text = '      ' .. option.name .. ' = ' .. lua_value(option.default) .. ','
      lines[#lines + 1] = with_comment(text, option.example)
    end
  end
  vim.list_extend(lines, { '    })', '<' })
  for _, option in ipairs(options) do
    lines[#lines + 1] = right('*baton-config-' .. option.name .. '*')
    lines[#lines + 1] = option.name .. ' ~'
    add_text(lines, option.help, '    ')
    if option.fields then
      lines[#lines + 1] = ''
      local wide = 0
      for _, field in ipairs(option.fields) do
        wide = math.max(wide, #field.name)
      end
      for _, field in ipairs(option.fields) do
        local pad = string.rep(' ', wide - #field.name + 2)
        lines[#lines + 1] = '    ' .. field.name .. pad .. field.help
      end
    end
    lines[#lines + 1] = ''
  end
  return lines
end

---@param path string
local function write(path)
  local file = vim.fn.readfile(path)
  local first, last
  for i, line in ipairs(file) do
    if not first and vim.endswith(line, HEADING) then
      first = i
    elseif first and line:match('^====') then
      last = i
      break
    end
  end
  assert(first and last, path .. ': no ' .. HEADING .. ' section followed by a rule')
  local out = vim.list_slice(file, 1, first)
  vim.list_extend(out, section())
  vim.list_extend(out, vim.list_slice(file, last))
  vim.fn.writefile(out, path)
end

if arg[1] == '--write' then
  write(assert(arg[2], 'usage: help.lua [--write FILE]'))
else
  io.stdout:write(table.concat(section(), '\n') .. '\n')
end
