-- sliding_window: p1 = limit, p2 = window. A = current count, B = previous
-- count, Idle = end of the window after the current one.

-- The counter's products (count × window in µs: a million a day is 8.6e16)
-- outgrow a double's 2^53, so they are computed exactly in base-2^26 limbs.
-- Every operand is below 2^51 (the Go side bounds limit and window by 2^50).
local LIMB = 67108864 -- 2^26

-- mul returns a*b as three base-2^26 digits, most significant first.
local function mul(a, b)
  local a1 = math.floor(a / LIMB)
  local a0 = a - a1 * LIMB
  local b1 = math.floor(b / LIMB)
  local b0 = b - b1 * LIMB
  local p0 = a0 * b0
  local c0 = math.floor(p0 / LIMB)
  local m = a1 * b0 + a0 * b1 + c0
  local c1 = math.floor(m / LIMB)
  return a1 * b1 + c1, m - c1 * LIMB, p0 - c0 * LIMB
end

-- mul_less reports a*b < c*d, exactly.
local function mul_less(a, b, c, d)
  local x2, x1, x0 = mul(a, b)
  local y2, y1, y0 = mul(c, d)
  if x2 ~= y2 then return x2 < y2 end
  if x1 ~= y1 then return x1 < y1 end
  return x0 < y0
end

-- mul_div_floor returns floor(a*b/c) for a quotient below 2^51: a double
-- estimate (off by at most a unit or two), corrected by exact comparison.
local function mul_div_floor(a, b, c)
  local q = math.max(math.floor(a * b / c), 0)
  while not mul_less(a, b, q + 1, c) do q = q + 1 end -- (q+1)·c <= a·b
  while q > 0 and mul_less(a, b, q, c) do q = q - 1 end -- q·c > a·b
  return q
end

-- mul_div_ceil returns ceil(a*b/c) likewise.
local function mul_div_ceil(a, b, c)
  local q = mul_div_floor(a, b, c)
  if mul_less(q, c, a, b) then q = q + 1 end
  return q
end

local function sw_retry(limit, w, cur, prev, elapsed, cost)
  if cost > limit then return -1 end
  local room = limit - cur - cost + 1
  if room > 0 and prev > 0 then
    local e2 = w - mul_div_ceil(room, w, prev) + 1
    if e2 < w then return math.max(e2 - elapsed, 1) end
  end
  local to_next = w - elapsed
  room = limit - cost + 1
  if cur < room then return to_next end
  local e2 = w - mul_div_ceil(room, w, cur) + 1
  return to_next + math.min(math.max(e2, 0), w)
end

-- sw_report returns remaining, reset, idle and, when nothing is left, the
-- wait for one unit (a unit request's retry).
local function sw_report(limit, w, cur, prev, start, elapsed, now)
  local rem = math.max(0, limit - cur - mul_div_floor(prev, w - elapsed, w))
  local idle = 0
  if cur > 0 then idle = start + 2 * w elseif prev > 0 then idle = start + w end
  local nx = 0
  if rem == 0 then nx = sw_retry(limit, w, cur, prev, elapsed, 1) end
  return rem, untl(idle, now), idle, nx
end

local function sliding_window(st, now, cost, force, limit, w)
  now = math.max(now, 0)
  local idx = idiv(now, w)
  local cur, prev = 0, 0
  -- a state of this policy ends on a window boundary and counts nothing
  -- negative; another's (or no one's) is absent
  if st[3] > 0 and st[1] >= 0 and st[2] >= 0 and st[3] % w == 0 then
    local sidx = idiv(st[3], w) - 2
    if sidx == idx then
      cur, prev = st[1], st[2]
    elseif sidx == idx - 1 then
      prev = st[1]
    elseif sidx > idx then -- the clock went back: clamp to the stored window
      idx, now = sidx, sidx * w
      cur, prev = st[1], st[2]
    end
  end
  local start = idx * w
  local elapsed = now - start
  local room = limit - cur - cost + 1
  if force or (room > 0 and mul_less(prev, w - elapsed, room, w)) then
    if cost == 0 then
      local rem, reset, idle, nx = sw_report(limit, w, cur, prev, start, elapsed, now)
      return nil, {1, rem, reset, 0, 0, idle, nx}
    end
    cur = cur + cost
    local rem, reset, idle, nx = sw_report(limit, w, cur, prev, start, elapsed, now)
    return {cur, prev, start + 2 * w}, {1, rem, reset, 0, 0, idle, nx}
  end
  local rem, reset, idle, nx = sw_report(limit, w, cur, prev, start, elapsed, now)
  return nil, {0, rem, reset, sw_retry(limit, w, cur, prev, elapsed, cost), 0, idle, nx}
end
