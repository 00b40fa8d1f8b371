-- :Sema and the autocommands of sema.nvim. Everything else loads on first use.
if vim.g.loaded_sema then
  return
end
vim.g.loaded_sema = true

vim.api.nvim_create_user_command("Sema", function(opts)
  require("sema").command(opts.args)
end, {
  nargs = "*",
  desc = "Sema: open the chat, send a prompt, or run a subcommand (:help sema-commands)",
  complete = function(arglead, cmdline)
    return require("sema").complete_command(arglead, cmdline)
  end,
})

vim.api.nvim_create_autocmd("VimLeavePre", {
  group = vim.api.nvim_create_augroup("sema", { clear = true }),
  callback = function()
    local loaded = package.loaded["sema"]
    if loaded then
      loaded.stop()
    end
  end,
})
