-- token_bucket (GCRA): p1 = emission interval t, p2 = burst b. A = Idle = TAT.
local function token_bucket(st, now, cost, force, t, b)
  local tau = t * b
  local tat = math.max(st[1], now)
  if cost == 0 then
    return nil, {1, math.max(0, tdiv(tau - (tat - now), t)), untl(tat, now), 0, 0, idle_at(tat, now)}
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
      return nil, {0, math.max(0, tdiv(tau - (tat - now), t)), untl(tat, now), retry, 0, idle_at(tat, now)}
    end
  end
  local ntat = tat + t * cost
  return {ntat, 0, ntat}, {1, math.max(0, tdiv(tau - (ntat - now), t)), ntat - now, 0, 0, ntat}
end
