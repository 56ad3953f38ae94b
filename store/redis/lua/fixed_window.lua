-- fixed_window: p1 = limit, p2 = window. A = window index, B = count.
local function fixed_window(st, now, cost, force, limit, w)
  local idx = idiv(math.max(now, 0), w)
  local count = 0
  -- a state of this policy ends its window and counts nothing negative;
  -- another's (or no one's) is treated as absent
  if st[3] > 0 and st[1] >= 0 and st[2] >= 0 and st[3] == st[1] * w + w then
    if st[1] == idx then
      count = st[2]
    elseif st[1] > idx then -- the clock went back: stay in the later window
      idx, count = st[1], st[2]
    end
  end
  local e = idx * w + w
  local reset = untl(e, now)
  if cost > limit - count and not force then
    local idle = e
    if count == 0 then reset, idle = 0, 0 end
    local retry = -1
    if cost <= limit then retry = math.max(reset, 1) end
    local rem, nx = math.max(0, limit - count), 0
    if rem == 0 then nx = math.max(reset, 1) end
    return nil, {0, rem, reset, retry, 0, idle, nx}
  end
  count = count + cost
  if count == 0 then
    return nil, {1, limit - count, 0, 0, 0, 0, 0}
  end
  local rem, nx = math.max(0, limit - count), 0
  if rem == 0 then nx = math.max(reset, 1) end
  return {idx, count, e}, {1, rem, reset, 0, 0, e, nx}
end
