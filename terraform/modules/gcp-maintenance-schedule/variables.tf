variable "project_id" {
  description = "Project of the scheduler job."
  type        = string
}

variable "region" {
  description = "Region of the scheduler job."
  type        = string
}

variable "name" {
  description = "Job name."
  type        = string
}

variable "endpoint_url" {
  description = "The sluice endpoint (the SQS endpoint URL); the job calls POST <endpoint_url>/_sluice/maintain."
  type        = string

  validation {
    condition     = can(regex("^https://", var.endpoint_url))
    error_message = "The endpoint URL is https://..."
  }
}

variable "token" {
  description = "The maintenance bearer token, the same value the service reads from Secret Manager as SLUICE_MAINTENANCE_TOKEN."
  type        = string
  sensitive   = true
}

variable "schedule" {
  description = "How often the pass runs (cron, in time_zone)."
  type        = string
  default     = "* * * * *"

  validation {
    condition     = length(split(" ", var.schedule)) == 5
    error_message = "The schedule is a five-field cron expression."
  }
}

variable "time_zone" {
  description = "Time zone of the schedule."
  type        = string
  default     = "Etc/UTC"
}
