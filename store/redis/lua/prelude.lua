-- tollgate: shared helpers. All times and durations are integer
-- microseconds; Lua numbers are doubles, exact below 2^53, and the Go side
-- validates every policy so that no product reaches 2^53.

local function idiv(a, b) -- floor(a/b), exact, b > 0
  local q = math.floor(a / b)
  local r = a - q * b
  if r < 0 then q = q - 1 elseif r >= b then q = q + 1 end
  return q
end

local function tdiv(a, b) -- Go's a/b: truncates toward zero, b > 0
  if a >= 0 then return idiv(a, b) end
  return -idiv(-a, b)
end

local function cdiv(a, b) -- ceil(a/b) for a >= 0, b > 0
  local q = idiv(a, b)
  if q * b < a then q = q + 1 end
  return q
end

local function untl(t, now) -- limit's until: never negative
  if t <= now then return 0 end
  return t - now
end

local function idle_at(t, now)
  if t <= now then return 0 end
  return t
end

local function fmt(x) return string.format('%d', x) end

local function clock(arg)
  local n = tonumber(arg)
  if n >= 0 then return n end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- ttl_ms is the key's time to live: from now to the idle instant, rounded
-- up to whole milliseconds (so expiry never comes early), at least floor.
local function ttl_ms(idle, now, floor)
  local ms = cdiv(math.max(idle - now, 1), 1000)
  if ms < floor then ms = floor end
  return ms
end

-- A fixed-size state is the string "A B Idle", or just "A" when B is 0
-- and Idle equals A (a token bucket's TAT); an absent key is {0, 0, 0}.
local function load(key)
  local v = redis.call('GET', key)
  if not v then return {0, 0, 0} end
  local x = tonumber(v)
  if x then return {x, 0, x} end
  local a, b, i = string.match(v, '^(%-?%d+) (%-?%d+) (%-?%d+)$')
  if not a then return redis.error_reply('tollgate: key ' .. key .. ' holds no tollgate state') end
  return {tonumber(a), tonumber(b), tonumber(i)}
end

local function save(key, st, now, floor)
  if st[3] <= now then
    redis.call('DEL', key)
    return
  end
  local v
  if st[2] == 0 and st[1] == st[3] then
    v = fmt(st[1])
  else
    v = fmt(st[1]) .. ' ' .. fmt(st[2]) .. ' ' .. fmt(st[3])
  end
  redis.call('SET', key, v, 'PX', fmt(ttl_ms(st[3], now, floor)))
end

-- A decision is {allowed, remaining, reset, retry (-1 = never), delay, idle,
-- next}: next is the wait for one unit when remaining is 0, else 0.
