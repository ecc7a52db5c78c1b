variable "project_id" {
  description = "Google Cloud project."
  type        = string
}

variable "region" {
  description = "Region."
  type        = string
  default     = "europe-west1"
}

variable "source_zip" {
  description = "Path of the repository zip."
  type        = string
  default     = "sluice-source.zip"
}

variable "access_keys" {
  description = "AKID:SECRET[,...] for SigV4."
  type        = string
  sensitive   = true
}

variable "maintenance_token" {
  description = "Maintenance bearer token (openssl rand -hex 32)."
  type        = string
  sensitive   = true
}

variable "db_password" {
  description = "Database password (openssl rand -base64 24)."
  type        = string
  sensitive   = true
}

variable "pubsub_wakeups" {
  description = "Pub/Sub wake-ups instead of LISTEN/NOTIFY."
  type        = bool
  default     = false
}
