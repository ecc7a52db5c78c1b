output "store_url" {
  description = "SLUICE_STORE for this database (firestore://PROJECT[/DATABASE][?ttl=true])."
  value       = var.ttl ? "${local.base}?ttl=true" : local.base
}

output "ready" {
  description = "The indexes, fields and grant, for depends_on: the store's queries fail until their indexes exist."
  value = concat(
    [for ix in google_firestore_index.declared : ix.id],
    [for f in google_firestore_field.declared : f.id],
    [google_project_iam_member.datastore_user.id],
  )
}
