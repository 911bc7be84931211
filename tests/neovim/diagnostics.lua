-- Run by tests/neovim.rs after the documented snippet (docs/editors.md) was
-- loaded as the init file: waits for a diagnostic of code $IDEMCHART_EXPECT
-- in the file Neovim opened, writes every diagnostic, code and message, one
-- a line, to $IDEMCHART_CODES, and quits; quits with status 1, saying what
-- it got, when that code does not arrive within 20 s.
local bufnr = vim.api.nvim_get_current_buf()
local expected = os.getenv("IDEMCHART_EXPECT")
local function lines()
  local found, seen = {}, false
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code) or "?"
    seen = seen or code == expected
    table.insert(found, code .. " " .. (d.message:gsub("\n", " ")))
  end
  return found, seen
end
if not vim.wait(20000, function() local _, seen = lines(); return seen end, 50) then
  io.stderr:write("neovim test: no " .. expected .. " within 20 s; got "
    .. vim.inspect((lines())) .. "; clients: "
    .. vim.inspect(vim.tbl_map(function(c) return c.name end, vim.lsp.get_active_clients())) .. "\n")
  vim.cmd("cquit 1")
end
local out = io.open(os.getenv("IDEMCHART_CODES"), "w")
out:write(table.concat((lines()), "\n") .. "\n")
out:close()
vim.cmd("qall!")
