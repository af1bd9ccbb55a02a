local out = os.getenv("FP_OUT")
local cmd = vim.json and vim.json.decode(os.getenv("FP_CMD")) or vim.fn.json_decode(os.getenv("FP_CMD"))
local files = vim.fn.json_decode(os.getenv("FP_FILES"))
local client_id = vim.lsp.start_client({ name = "failpedia", cmd = cmd, root_dir = vim.fn.getcwd() })
local results = {}
for _, f in ipairs(files) do
  vim.cmd("edit " .. vim.fn.fnameescape(f))
  local buf = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(buf, client_id)
  vim.wait(20000, function() return #vim.diagnostic.get(buf) > 0 end, 100)
  local got = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(got, { lnum = d.lnum, severity = d.severity, message = d.message, code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code) })
  end
  results[f] = got
end
local fh = io.open(out, "w"); fh:write(vim.fn.json_encode(results)); fh:close()
vim.lsp.stop_client(client_id)
vim.cmd("qa!")
