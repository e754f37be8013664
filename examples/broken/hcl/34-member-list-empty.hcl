# Mistake: pod pool "harness" has an empty member list, so it has no
# cluster to run Jobs on.
# poolc reports that the member list is empty.
pool "lab" {
  pod_pool "harness" {
    image   = "lab-harness"
    members = []
  }
}
