-- Several requests, each on its own (Store.ApplyEach): KEYS and ARGV as
-- all.lua's. Each request is decided and, when it admits, saved before
-- the next, as one Apply after another would be. Returns the decisions,
-- seven values each, then now.
local algs = {fixed_window, nil, sliding_window, token_bucket, leaky_bucket}
local tnow = clock(ARGV[1])
local floor = tonumber(ARGV[2])
local out = {}
for i = 1, #KEYS do
  local j = 2 + (i - 1) * 6
  local alg, cost = tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2])
  local p1, p2, p3, p4 = tonumber(ARGV[j + 3]), tonumber(ARGV[j + 4]), tonumber(ARGV[j + 5]), tonumber(ARGV[j + 6])
  local key = KEYS[i]
  local d
  if alg == 2 then
    d = sliding_log(key, tnow, cost, p1, p2, tnow, floor)
  else
    local st = load(key)
    if st.err then return st end
    local nst
    nst, d = algs[alg](st, tnow, cost, false, p1, p2, p3, p4)
    if nst then save(key, nst, tnow, floor) end
  end
  for k = 1, 7 do out[#out + 1] = d[k] end
end
out[#out + 1] = tnow
return out
