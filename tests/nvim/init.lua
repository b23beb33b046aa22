-- Test init for tests/test_neovim.py: loads the user-facing config exactly as a user would
-- (`:luafile editors/neovim/turnback.lua`) with the server command from the environment.
vim.g.turnback_cmd = vim.fn.json_decode(os.getenv("TURNBACK_NVIM_CMD"))

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

vim.cmd("luafile " .. vim.fn.fnameescape(os.getenv("TURNBACK_NVIM_CONFIG")))
