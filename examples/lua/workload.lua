-- workload.lua - what an interpreter runs, for examples/lua_trace: deep
-- call trees of many names (recursion, methods on tables, closures,
-- string building), errors caught by pcall from depth, a coroutine
-- generator, tail calls.  Deterministic; its one argument scales it
-- (default 4000: about a second untraced here; 1 for tests).
local scale = tonumber(...) or 4000

local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end

-- A class with methods, as a table and a metatable.
local Vec = {}
Vec.__index = Vec
function Vec.new(x, y) return setmetatable({ x = x, y = y }, Vec) end
function Vec:add(o) return Vec.new(self.x + o.x, self.y + o.y) end
function Vec:scale(k) return Vec.new(self.x * k, self.y * k) end
function Vec:dot(o) return self.x * o.x + self.y * o.y end

local function walk_vectors(n)
  local acc = Vec.new(0, 0)
  for i = 1, n do
    acc = acc:add(Vec.new(i, -i)):scale(0.5)
  end
  return acc:dot(Vec.new(1, 1))
end

-- Closures made per call, called through a table of them.
local function make_counter(step)
  local n = 0
  return function() n = n + step; return n end
end

local function run_counters(n)
  local cs = {}
  for i = 1, 8 do cs[i] = make_counter(i) end
  local sum = 0
  for i = 1, n do sum = sum + cs[i % 8 + 1]() end
  return sum
end

-- String building through the string library and table.concat.
local function render_row(i)
  return string.format("%5d|%s|%x", i, string.rep("ab", i % 7), i * 31)
end

local function build_text(n)
  local parts = {}
  for i = 1, n do parts[#parts + 1] = render_row(i) end
  return #table.concat(parts, "\n")
end

-- An error raised at depth, caught by pcall: Lua returns from none of
-- the frames it unwinds.
local function dive(d)
  if d == 0 then error("bottom reached") end
  return 1 + dive(d - 1)
end

local function guarded(n)
  local caught = 0
  for i = 1, n do
    local ok = pcall(function() local n = dive(6 + i % 5); return n end)
    if not ok then caught = caught + 1 end
  end
  return caught
end

-- A generator: a coroutine that yields its values.
local function squares(n)
  return coroutine.wrap(function()
    for i = 1, n do coroutine.yield(i * i) end
  end)
end

local function sum_squares(n)
  local s = 0
  for v in squares(n) do s = s + v end
  return s
end

-- Tail calls: each replaces its caller's frame.
local function count_down(n, acc)
  if n == 0 then return acc end
  return count_down(n - 1, acc + n)
end

local function tree(depth)
  if depth == 0 then return { leaf = true } end
  return { left = tree(depth - 1), right = tree(depth - 1) }
end

local function count_leaves(t)
  if t.leaf then return 1 end
  return count_leaves(t.left) + count_leaves(t.right)
end

local check = 0
for round = 1, scale do
  check = check + fib(12 + round % 3)
  check = check + walk_vectors(200)
  check = check + run_counters(400)
  check = check + build_text(40)
  check = check + guarded(20)
  check = check + sum_squares(100)
  check = check + count_down(300, 0)
  check = check + count_leaves(tree(7))
end
print(string.format("workload: scale %d check %.1f", scale, check))
