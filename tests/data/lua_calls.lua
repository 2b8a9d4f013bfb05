-- lua_calls.lua - tests/test_lua.c's script for examples/lua_trace: each
-- function's zone count is known (the test lists them with their reason).
local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end

local function dive(d)
  if d == 0 then error("bottom") end
  return 1 + dive(d - 1)
end

local function down(n)
  if n == 0 then return 0 end
  return down(n - 1)
end

local function gen(n)
  for i = 1, n do coroutine.yield(i) end
end

local function failing()
  dive(3)
end

local function try_dive(d)
  return pcall(function() local r = dive(d); return r end)
end

local function main_fn()
  local s = fib(10)
  for _ = 1, 3 do try_dive(5) end
  s = s + down(10)
  local co = coroutine.create(gen)
  for _ = 1, 4 do coroutine.resume(co, 3) end
  local bad = coroutine.create(failing)
  coroutine.resume(bad)
  local abandoned = coroutine.wrap(gen)
  abandoned(5)
  return s
end

main_fn()
