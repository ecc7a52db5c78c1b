output "sqs_endpoint_url" {
  description = "The SQS endpoint: AWS_ENDPOINT_URL_SQS, or --endpoint-url of the AWS CLI."
  value       = module.service.uri
}

output "service_name" {
  description = "The Cloud Run service."
  value       = module.service.name
}

output "service_account_email" {
  description = "The service account the service runs as."
  value       = google_service_account.sluice.email
}

output "database_connection_name" {
  description = "The Cloud SQL instance's connection name (PROJECT:REGION:INSTANCE), for the Cloud SQL Auth Proxy or sluice maintain as a job."
  value       = module.database.connection_name
}

output "secret_ids" {
  description = "The Secret Manager secrets: the store URL, the access keys, the maintenance token."
  value = {
    store             = local.secret_store
    access_keys       = local.secret_keys
    maintenance_token = local.secret_token
  }
}

output "wakeups_topic" {
  description = "The Pub/Sub wake-up topic, or null without Pub/Sub wake-ups."
  value       = var.pubsub_wakeups ? module.wakeups[0].topic : null
}

output "maintenance_url" {
  description = "What the scheduler job calls every minute (POST, with the bearer token)."
  value       = module.maintenance.uri
}

output "service_config" {
  description = "What the Cloud Run revision runs with (scaling, service account, env names and the secrets they come from); holds no secret value."
  value       = module.service.config
}
