output "sqs_endpoint_url" {
  description = "The SQS endpoint (the function's run.app URL): AWS_ENDPOINT_URL_SQS, or --endpoint-url of the AWS CLI."
  value       = module.function.uri
}

output "maintenance_url" {
  description = "What the scheduler job calls every minute (POST, with the bearer token)."
  value       = module.maintenance.uri
}

output "function_name" {
  description = "The function."
  value       = module.function.name
}

output "service_account_email" {
  description = "The service account the function runs as."
  value       = google_service_account.sluice.email
}

output "database_connection_name" {
  description = "The Cloud SQL instance's connection name (PROJECT:REGION:INSTANCE), for the Cloud SQL Auth Proxy or sluice maintain as a job."
  value       = module.database.connection_name
}

output "network" {
  description = "The VPC network the database's private IP is on, and the function's connector to it."
  value = {
    network   = google_compute_network.this.name
    connector = google_vpc_access_connector.this.name
  }
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

output "function_config" {
  description = "What the function runs with (build, scaling, service account, env names and the secrets they come from); holds no secret value."
  value       = module.function.config
}
