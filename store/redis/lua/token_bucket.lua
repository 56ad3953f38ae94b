-- token_bucket (GCRA): p1 = emission interval t, p2 = burst b. A = Idle = TAT.
local function token_bucket(st, now, cost, force, t, b)
  local tau = t * b
  local tat = math.max(st[1], now)
  -- remaining and the wait for one unit (TAT - tau + t) at TAT x
  local function left(x)
    local r = math.max(0, tdiv(tau - (x - now), t))
    if r > 0 then return r, 0 end
    return 0, untl(x - tau + t, now)
  end
  if cost == 0 then
    local r, nx = left(tat)
    return nil, {1, r, untl(tat, now), 0, 0, idle_at(tat, now), nx}
  end
  if not force then
    local refused, retry = false, -1
    if cost > b then -- t*cost > tau: refused whatever the state
      refused = true
    else
      local allow_at = tat + t * cost - tau
      if now < allow_at then refused, retry = true, allow_at - now end
    end
    if refused then
      local r, nx = left(tat)
      return nil, {0, r, untl(tat, now), retry, 0, idle_at(tat, now), nx}
    end
  end
  local ntat = tat + t * cost
  local r, nx = left(ntat)
  return {ntat, 0, ntat}, {1, r, ntat - now, 0, 0, ntat, nx}
end
