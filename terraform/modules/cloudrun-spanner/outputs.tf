output "sqs_endpoint_url" {
  description = "The SQS endpoint: AWS_ENDPOINT_URL_SQS, or --endpoint-url of the AWS CLI."
  value       = module.service.uri
}

output "maintenance_url" {
  description = "What the scheduler job calls every minute (POST, with the bearer token)."
  value       = module.maintenance.uri
}

output "service_name" {
  description = "The Cloud Run service."
  value       = module.service.name
}

output "service_account_email" {
  description = "The service account the service runs as."
  value       = google_service_account.sluice.email
}

output "store_url" {
  description = "SLUICE_STORE as the service has it (spanner://projects/P/instances/I/databases/D)."
  value       = local.store_url
}

output "spanner_instance" {
  description = "The Spanner instance's name and size."
  value = {
    name             = google_spanner_instance.this.name
    config           = google_spanner_instance.this.config
    processing_units = google_spanner_instance.this.processing_units
  }
}

output "wakeups_topic" {
  description = "The Pub/Sub wake-up topic."
  value       = module.wakeups.topic
}

output "secret_ids" {
  description = "The Secret Manager secrets: the access keys, the maintenance token."
  value = {
    access_keys       = local.secret_keys
    maintenance_token = local.secret_token
  }
}

output "service_config" {
  description = "What the Cloud Run revision runs with (scaling, service account, env names and the secrets they come from); holds no secret value."
  value       = module.service.config
}
