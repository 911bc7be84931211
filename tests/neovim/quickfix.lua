-- Run by tests/neovim.rs: `nvim --headless --clean -c "luafile quickfix.lua" FILE`
-- with IDEMCHART_BIN set. Starts `idemchart lsp` with Neovim's own client,
-- waits for the cumulative-update finding (I004), applies its quick fix,
-- writes the buffer and quits; any failure quits with status 1 and says why.

local function fail(message)
  io.stderr:write("neovim test: " .. message .. "\n")
  vim.cmd("cquit 1")
end

local ok, err = pcall(function()
  local bufnr = vim.api.nvim_get_current_buf()
  local path = vim.api.nvim_buf_get_name(bufnr)
  local client_id = vim.lsp.start_client({
    name = "idemchart",
    cmd = { os.getenv("IDEMCHART_BIN"), "lsp" },
    root_dir = vim.fn.fnamemodify(path, ":h"),
  })
  if not client_id then
    return fail("the client did not start")
  end
  vim.lsp.buf_attach_client(bufnr, client_id)
  local client = vim.lsp.get_client_by_id(client_id)

  local finding
  local found = vim.wait(20000, function()
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
      if code == "I004" then
        finding = d
        return true
      end
    end
    return false
  end, 50)
  if not found then
    return fail("no I004 diagnostic within 20 s; got " .. vim.inspect(vim.diagnostic.get(bufnr)))
  end

  -- The finding's lines: the server offers the actions of the
  -- diagnostics that touch the range.
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = {
      start = { line = finding.lnum, character = 0 },
      ["end"] = { line = (finding.end_lnum or finding.lnum) + 1, character = 0 },
    },
    context = { diagnostics = {}, only = { "quickfix" } },
  }
  local response = client.request_sync("textDocument/codeAction", params, 10000, bufnr)
  if not response or response.err then
    return fail("codeAction failed: " .. vim.inspect(response))
  end
  local chosen
  for _, action in ipairs(response.result or {}) do
    if action.title:match("^Guard the transition") then
      chosen = action
    end
  end
  if not chosen then
    return fail("no guarding quick fix among " .. vim.inspect(response.result))
  end
  vim.lsp.util.apply_workspace_edit(chosen.edit, client.offset_encoding or "utf-16")
  vim.cmd("write")
  client.stop()
  vim.cmd("qall!")
end)
if not ok then
  fail(tostring(err))
end
