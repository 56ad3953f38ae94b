-- sliding_window: p1 = limit, p2 = window. A = current count, B = previous
-- count, Idle = end of the window after the current one.
local function sw_report(limit, w, cur, prev, start, elapsed, now)
  local rem = math.max(0, limit - cur - idiv(prev * (w - elapsed), w))
  local idle = 0
  if cur > 0 then idle = start + 2 * w elseif prev > 0 then idle = start + w end
  return rem, untl(idle, now), idle
end

local function sw_retry(limit, w, cur, prev, elapsed, cost)
  if cost > limit then return -1 end
  local room = limit - cur - cost + 1
  if room > 0 and prev > 0 then
    local e2 = w - cdiv(room * w, prev) + 1
    if e2 < w then return math.max(e2 - elapsed, 1) end
  end
  local to_next = w - elapsed
  room = limit - cost + 1
  if cur < room then return to_next end
  local e2 = w - cdiv(room * w, cur) + 1
  return to_next + math.min(math.max(e2, 0), w)
end

local function sliding_window(st, now, cost, force, limit, w)
  now = math.max(now, 0)
  local idx = idiv(now, w)
  local cur, prev = 0, 0
  if st[3] > 0 then
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
  if force or (room > 0 and prev * (w - elapsed) < room * w) then
    if cost == 0 then
      local rem, reset, idle = sw_report(limit, w, cur, prev, start, elapsed, now)
      return nil, {1, rem, reset, 0, 0, idle}
    end
    cur = cur + cost
    local rem, reset, idle = sw_report(limit, w, cur, prev, start, elapsed, now)
    return {cur, prev, start + 2 * w}, {1, rem, reset, 0, 0, idle}
  end
  local rem, reset, idle = sw_report(limit, w, cur, prev, start, elapsed, now)
  return nil, {0, rem, reset, sw_retry(limit, w, cur, prev, elapsed, cost), 0, idle}
end
