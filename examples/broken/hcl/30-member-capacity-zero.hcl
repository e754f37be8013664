# Mistake: member "pool-b" in the compact member list has capacity 0
# (":0"); a member runs at least one Job at a time.
# poolc reports that the capacity must be an integer >= 1, pointing at
# the capacity inside the string.
pool "lab" {
  pod_pool "harness" {
    image   = "lab-harness"
    members = "pool-a@node-a:4,pool-b@node-b:0"
  }
}
