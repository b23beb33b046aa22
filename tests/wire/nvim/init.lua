-- Test init for tests/test_neovim.py: installs the plugin as Neovim's own package manager does
-- (a pack/*/start/turnback link to editors/neovim on 'packpath', see :h packages), then calls
-- require("turnback").setup() as the README tells users to, with the server command from the
-- environment.

-- Watchdog: whatever goes wrong (even a syntax error in the driver), Neovim exits.
local out = os.getenv("TURNBACK_NVIM_OUT")
vim.defer_fn(function()
  local f = io.open(out, "a")
  if f then
    f:write(vim.fn.json_encode({ step = "error", error = "watchdog: the driver took too long" }))
    f:write("\n")
    f:close()
  end
  vim.cmd("cquit 3")
end, tonumber(os.getenv("TURNBACK_NVIM_WATCHDOG_MS") or "50000"))

vim.opt.packpath:prepend(os.getenv("TURNBACK_NVIM_PACKPATH"))
vim.cmd("packloadall")
require("turnback").setup({ cmd = vim.fn.json_decode(os.getenv("TURNBACK_NVIM_CMD")) })
