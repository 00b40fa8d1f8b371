-- luacheck settings for the plugin and its test scenarios (`make lint`).
std = "luajit"
globals = { "vim" }
max_line_length = 120
-- `self` is often unused in methods; `_` names are ignored on purpose
self = false
files["tests/*.lua"] = { read_globals = { "arg" } }
