# Mistake: context "pool-a" appears twice in the member list (once on
# node-a, once on node-c); each cluster is one member.
# poolc reports that the context is listed twice.
pool "lab" {
  pod_pool "harness" {
    image   = "lab-harness"
    members = "pool-a@node-a:4,pool-b@node-b,pool-a@node-c"
  }
}
