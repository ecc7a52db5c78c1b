output "job_name" {
  description = "The scheduler job's name."
  value       = google_cloud_scheduler_job.this.name
}

output "uri" {
  description = "What the job calls."
  value       = google_cloud_scheduler_job.this.http_target[0].uri
}
